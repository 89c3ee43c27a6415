// 2048: slide the tiles of a 4x4 board; equal tiles merge. Reach the target tile (default 256).
(function () {
  "use strict";
  const N = 4;
  const W = 400;
  const H = 460;
  const TOP = 60;
  const CELL = 100;
  const GAP = 6;
  const MOVES = ["up", "down", "left", "right"];
  const KEYS = { ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right", w: "up", s: "down", a: "left", d: "right" };
  const MOVE_KEY = { up: "ArrowUp", down: "ArrowDown", left: "ArrowLeft", right: "ArrowRight" };
  const COLORS = {
    0: "#cdc1b4", 2: "#eee4da", 4: "#ede0c8", 8: "#f2b179", 16: "#f59563", 32: "#f67c5f", 64: "#f65e3b",
    128: "#edcf72", 256: "#edcc61", 512: "#edc850", 1024: "#edc53f", 2048: "#edc22e",
  };

  function create(ctx, options) {
    let target = Math.floor(Number(options && options.target) || 256);
    if (target < 16 || (target & (target - 1)) !== 0) target = 256;
    const milestoneValues = [];
    for (let v = 16; v <= target; v *= 2) milestoneValues.push(v);

    const game = {
      moves: MOVES.slice(),
      milestones: milestoneValues.map((v) => "tile " + v),
      reached: [],
      score: 0,
      done: false,
      won: false,
      board: [],
      rng: null,
      steps: 0,
      drag: null,

      reset(rng) {
        this.rng = rng;
        this.board = [];
        for (let r = 0; r < N; r++) this.board.push([0, 0, 0, 0]);
        this.score = 0; this.done = false; this.won = false; this.reached = []; this.steps = 0; this.drag = null;
        this.spawn(); this.spawn();
        this.check();
      },

      spawn() {
        const empty = [];
        for (let r = 0; r < N; r++) for (let c = 0; c < N; c++) if (this.board[r][c] === 0) empty.push([r, c]);
        if (!empty.length) return;
        const cell = empty[Math.floor(this.rng() * empty.length)];
        this.board[cell[0]][cell[1]] = this.rng() < 0.9 ? 2 : 4;
      },

      // Slide one line toward index 0; returns [newLine, points].
      slide(line) {
        const tiles = line.filter((v) => v !== 0);
        const out = [];
        let points = 0;
        for (let i = 0; i < tiles.length; i++) {
          if (i + 1 < tiles.length && tiles[i] === tiles[i + 1]) { out.push(tiles[i] * 2); points += tiles[i] * 2; i++; }
          else out.push(tiles[i]);
        }
        while (out.length < N) out.push(0);
        return [out, points];
      },

      // The board after `dir` (without a new tile): [board, points, changed].
      apply(dir) {
        const b = this.board.map((row) => row.slice());
        let points = 0;
        let changed = false;
        for (let i = 0; i < N; i++) {
          const idx = [];
          for (let j = 0; j < N; j++) {
            if (dir === "left") idx.push([i, j]);
            else if (dir === "right") idx.push([i, N - 1 - j]);
            else if (dir === "up") idx.push([j, i]);
            else idx.push([N - 1 - j, i]);
          }
          const line = idx.map(([r, c]) => b[r][c]);
          const [out, p] = this.slide(line);
          points += p;
          idx.forEach(([r, c], k) => { if (b[r][c] !== out[k]) changed = true; b[r][c] = out[k]; });
        }
        return [b, points, changed];
      },

      canMove() {
        for (const dir of MOVES) if (this.apply(dir)[2]) return true;
        return false;
      },

      maxTile() {
        let m = 0;
        for (const row of this.board) for (const v of row) m = Math.max(m, v);
        return m;
      },

      check() {
        const m = this.maxTile();
        milestoneValues.forEach((v, i) => { if (m >= v && !this.reached.includes(this.milestones[i])) this.reached.push(this.milestones[i]); });
        if (m >= target) { this.won = true; this.done = true; }
        else if (!this.canMove()) this.done = true;
      },

      move(name) {
        if (typeof name !== "string" || !MOVES.includes(name)) return "unknown move: " + String(name);
        if (this.done) return "the game is over";
        const [b, points, changed] = this.apply(name);
        if (!changed) return "nothing moves " + name;
        this.board = b;
        this.score += points;
        this.steps += 1;
        this.spawn();
        this.check();
        return true;
      },

      onKey(key) {
        const m = KEYS[key];
        if (m) this.move(m);
      },

      onPointer(type, x, y) {
        if (type === "down") this.drag = [x, y];
        else if (type === "up" && this.drag) {
          const dx = x - this.drag[0];
          const dy = y - this.drag[1];
          this.drag = null;
          if (Math.max(Math.abs(dx), Math.abs(dy)) < 30) return;
          if (Math.abs(dx) > Math.abs(dy)) this.move(dx > 0 ? "right" : "left");
          else this.move(dy > 0 ? "down" : "up");
        }
      },

      moveToInput(name) {
        const key = MOVE_KEY[name];
        return key ? { type: "key", key } : null;
      },

      draw(c) {
        c.fillStyle = "#faf8ef";
        c.fillRect(0, 0, W, H);
        c.fillStyle = "#776e65";
        c.font = "bold 26px sans-serif";
        c.textAlign = "left"; c.textBaseline = "middle";
        c.fillText("2048", 12, TOP / 2);
        c.font = "bold 20px sans-serif";
        c.textAlign = "right";
        c.fillText("Score " + this.score, W - 12, TOP / 2);
        c.fillStyle = "#bbada0";
        c.fillRect(0, TOP, W, W);
        for (let r = 0; r < N; r++) {
          for (let col = 0; col < N; col++) {
            const v = this.board[r][col];
            const x = col * CELL + GAP;
            const y = TOP + r * CELL + GAP;
            c.fillStyle = COLORS[v] || "#3c3a32";
            c.fillRect(x, y, CELL - 2 * GAP, CELL - 2 * GAP);
            if (v) {
              c.fillStyle = v <= 4 ? "#776e65" : "#ffffff";
              c.font = "bold " + (v < 100 ? 44 : v < 1000 ? 36 : 28) + "px sans-serif";
              c.textAlign = "center"; c.textBaseline = "middle";
              c.fillText(String(v), x + (CELL - 2 * GAP) / 2, y + (CELL - 2 * GAP) / 2 + 2);
            }
          }
        }
        if (this.done) {
          c.fillStyle = "rgba(0,0,0,0.45)";
          c.fillRect(0, TOP, W, W);
          c.fillStyle = "#ffffff";
          c.font = "bold 40px sans-serif";
          c.textAlign = "center"; c.textBaseline = "middle";
          c.fillText(this.won ? "You win!" : "Game over", W / 2, TOP + W / 2);
        }
      },

      state() {
        return {
          board: this.board.map((row) => row.slice()), score: this.score, target, max_tile: this.maxTile(),
          steps: this.steps, done: this.done, won: this.won,
        };
      },

      describe() {
        const lines = ["2048 (4x4). Score " + this.score + ". Goal: make a " + target + " tile.", "Board (0 = empty, row 1 is the top):"];
        for (const row of this.board) lines.push(row.map((v) => String(v).padStart(4)).join(" "));
        lines.push("Moves: up, down, left, right (a move that slides nothing is refused).");
        if (this.done) lines.push(this.won ? "You reached the target: you win." : "No moves left: game over.");
        return lines.join("\n");
      },
    };
    return game;
  }

  AgentRL.register("g2048", { width: W, height: H, create });
})();
