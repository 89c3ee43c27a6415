// Tetris: a 10x20 well, pieces from a seeded 7-bag, real-time gravity. Clear the target number of lines (default 20).
(function () {
  "use strict";
  const COLS = 10;
  const ROWS = 20;
  const CELL = 24;
  const PANEL = 130;
  const W = COLS * CELL + PANEL;
  const H = ROWS * CELL;
  const MOVES = ["left", "right", "rotate", "soft drop", "hard drop", "noop"];
  const KEYS = { ArrowLeft: "left", ArrowRight: "right", ArrowUp: "rotate", ArrowDown: "soft drop", " ": "hard drop" };
  const MOVE_KEY = { left: "ArrowLeft", right: "ArrowRight", rotate: "ArrowUp", "soft drop": "ArrowDown", "hard drop": " " };
  const TYPES = ["I", "O", "T", "S", "Z", "J", "L"];
  // Each piece's rotation states (clockwise), as [x, y] cells in a 4x4 box whose top-left is the piece's (x, y).
  const SHAPES = {
    I: [[[0, 1], [1, 1], [2, 1], [3, 1]], [[2, 0], [2, 1], [2, 2], [2, 3]]],
    O: [[[1, 0], [2, 0], [1, 1], [2, 1]]],
    T: [[[1, 0], [0, 1], [1, 1], [2, 1]], [[1, 0], [1, 1], [2, 1], [1, 2]], [[0, 1], [1, 1], [2, 1], [1, 2]], [[1, 0], [0, 1], [1, 1], [1, 2]]],
    S: [[[1, 0], [2, 0], [0, 1], [1, 1]], [[1, 0], [1, 1], [2, 1], [2, 2]]],
    Z: [[[0, 0], [1, 0], [1, 1], [2, 1]], [[2, 0], [1, 1], [2, 1], [1, 2]]],
    J: [[[0, 0], [0, 1], [1, 1], [2, 1]], [[1, 0], [2, 0], [1, 1], [1, 2]], [[0, 1], [1, 1], [2, 1], [2, 2]], [[1, 0], [1, 1], [0, 2], [1, 2]]],
    L: [[[2, 0], [0, 1], [1, 1], [2, 1]], [[1, 0], [1, 1], [1, 2], [2, 2]], [[0, 1], [1, 1], [2, 1], [0, 2]], [[0, 0], [1, 0], [1, 1], [1, 2]]],
  };
  const COLORS = { I: "#00e5ff", O: "#ffe600", T: "#c04dff", S: "#2ee62e", Z: "#ff3030", J: "#3b6bff", L: "#ff9a1a" };
  const LINE_POINTS = [0, 100, 300, 500, 800];
  const SPAWN_X = 3;

  function create(ctx, options) {
    let target = Math.floor(Number(options && options.target) || 20);
    if (target < 1) target = 20;
    const thresholds = [1, 5, 10, 20, 30, 40, 50, 60, 80, 100, 150].filter((n) => n < target).slice(0, 11);
    thresholds.push(target);
    const milestoneNames = thresholds.map((n) => n + (n === 1 ? " line" : " lines"));

    const game = {
      moves: MOVES.slice(),
      milestones: milestoneNames,
      reached: [],
      score: 0,
      done: false,
      won: false,
      lines: 0,
      board: [],
      piece: null,
      queue: [],
      rng: null,
      acc: 0,
      pieces: 0,

      reset(rng) {
        this.rng = rng;
        this.board = [];
        for (let r = 0; r < ROWS; r++) this.board.push(new Array(COLS).fill(0));
        this.score = 0; this.lines = 0; this.done = false; this.won = false; this.reached = [];
        this.queue = []; this.acc = 0; this.pieces = 0; this.piece = null;
        this.spawn();
      },

      level() { return 1 + Math.floor(this.lines / 10); },
      interval() { return Math.max(100, 500 - 50 * (this.level() - 1)); },

      refill() {
        const bag = TYPES.slice();
        for (let i = bag.length - 1; i > 0; i--) {
          const j = Math.floor(this.rng() * (i + 1));
          const t = bag[i]; bag[i] = bag[j]; bag[j] = t;
        }
        this.queue.push(...bag);
      },

      spawn() {
        while (this.queue.length < 2) this.refill();
        const type = this.queue.shift();
        this.piece = { type, rotation: 0, x: SPAWN_X, y: 0 };
        this.acc = 0;
        this.pieces += 1;
        if (this.collides(type, 0, SPAWN_X, 0)) this.done = true;
      },

      cells(type, rotation, x, y) { return SHAPES[type][rotation].map(([dx, dy]) => [x + dx, y + dy]); },

      collides(type, rotation, x, y) {
        for (const [cx, cy] of this.cells(type, rotation, x, y)) {
          if (cx < 0 || cx >= COLS || cy < 0 || cy >= ROWS) return true;
          if (this.board[cy][cx]) return true;
        }
        return false;
      },

      shift(dx, dy) {
        const p = this.piece;
        if (this.collides(p.type, p.rotation, p.x + dx, p.y + dy)) return false;
        p.x += dx; p.y += dy;
        return true;
      },

      lock() {
        const p = this.piece;
        const id = TYPES.indexOf(p.type) + 1;
        for (const [cx, cy] of this.cells(p.type, p.rotation, p.x, p.y)) this.board[cy][cx] = id;
        const kept = this.board.filter((row) => row.some((v) => v === 0));
        const cleared = ROWS - kept.length;
        while (kept.length < ROWS) kept.unshift(new Array(COLS).fill(0));
        this.board = kept;
        if (cleared) {
          this.score += LINE_POINTS[cleared] * this.level();
          this.lines += cleared;
          thresholds.forEach((n, i) => { if (this.lines >= n && !this.reached.includes(milestoneNames[i])) this.reached.push(milestoneNames[i]); });
          if (this.lines >= target) { this.won = true; this.done = true; return; }
        }
        this.spawn();
      },

      update(dtMs) {
        if (this.done || !this.piece) return;
        this.acc += Math.max(0, Number(dtMs) || 0);
        while (!this.done && this.acc >= this.interval()) {
          this.acc -= this.interval();
          if (!this.shift(0, 1)) this.lock();
        }
      },

      move(name) {
        if (typeof name !== "string" || !MOVES.includes(name)) return "unknown move: " + String(name);
        if (this.done) return "the game is over";
        const p = this.piece;
        if (name === "noop") return true;
        if (name === "left") return this.shift(-1, 0) ? true : "blocked: cannot move left";
        if (name === "right") return this.shift(1, 0) ? true : "blocked: cannot move right";
        if (name === "rotate") {
          const n = SHAPES[p.type].length;
          const r = (p.rotation + 1) % n;
          if (this.collides(p.type, r, p.x, p.y)) return "blocked: cannot rotate";
          p.rotation = r;
          return true;
        }
        if (name === "soft drop") {
          if (this.shift(0, 1)) this.acc = 0; else this.lock();
          return true;
        }
        while (this.shift(0, 1)) { /* hard drop */ }
        this.lock();
        return true;
      },

      onKey(key) {
        const m = KEYS[key];
        if (m) this.move(m);
      },

      moveToInput(name) {
        const key = MOVE_KEY[name];
        return key ? { type: "key", key } : null;
      },

      drawCell(c, x, y, color, size) {
        c.fillStyle = color;
        c.fillRect(x + 1, y + 1, size - 2, size - 2);
      },

      draw(c) {
        c.fillStyle = "#000000";
        c.fillRect(0, 0, W, H);
        c.fillStyle = "#202028";
        for (let x = 1; x < COLS; x++) c.fillRect(x * CELL, 0, 1, H);
        for (let y = 1; y < ROWS; y++) c.fillRect(0, y * CELL, COLS * CELL, 1);
        for (let r = 0; r < ROWS; r++) {
          for (let col = 0; col < COLS; col++) {
            const v = this.board[r][col];
            if (v) this.drawCell(c, col * CELL, r * CELL, COLORS[TYPES[v - 1]], CELL);
          }
        }
        const p = this.piece;
        if (p && !this.won) {
          for (const [cx, cy] of this.cells(p.type, p.rotation, p.x, p.y)) {
            c.fillStyle = "#ffffff";
            c.fillRect(cx * CELL, cy * CELL, CELL, CELL);
            this.drawCell(c, cx * CELL, cy * CELL, COLORS[p.type], CELL);
          }
        }
        const px = COLS * CELL;
        c.fillStyle = "#30303c";
        c.fillRect(px, 0, PANEL, H);
        c.fillStyle = "#ffffff";
        c.font = "bold 18px sans-serif";
        c.textAlign = "left"; c.textBaseline = "top";
        c.fillText("NEXT", px + 10, 10);
        const next = this.queue[0];
        if (next) for (const [dx, dy] of SHAPES[next][0]) this.drawCell(c, px + 14 + dx * 22, 40 + dy * 22, COLORS[next], 22);
        c.fillStyle = "#ffffff";
        c.font = "bold 18px sans-serif";
        c.fillText("SCORE", px + 10, 120);
        c.fillText(String(this.score), px + 10, 142);
        c.fillText("LINES", px + 10, 180);
        c.fillText(this.lines + "/" + target, px + 10, 202);
        c.fillText("LEVEL", px + 10, 240);
        c.fillText(String(this.level()), px + 10, 262);
        if (this.done) {
          c.fillStyle = "rgba(0,0,0,0.6)";
          c.fillRect(0, H / 2 - 30, COLS * CELL, 60);
          c.fillStyle = "#ffffff";
          c.font = "bold 30px sans-serif";
          c.textAlign = "center"; c.textBaseline = "middle";
          c.fillText(this.won ? "YOU WIN" : "GAME OVER", (COLS * CELL) / 2, H / 2);
        }
      },

      state() {
        const p = this.piece;
        return {
          width: COLS, height: ROWS,
          board: this.board.map((row) => row.slice()),
          piece: p ? { type: p.type, rotation: p.rotation, x: p.x, y: p.y, cells: this.cells(p.type, p.rotation, p.x, p.y) } : null,
          next: this.queue[0] || null,
          shapes: SHAPES,
          score: this.score, lines: this.lines, level: this.level(), target,
          interval_ms: this.interval(), pieces: this.pieces, done: this.done, won: this.won,
        };
      },

      describe() {
        const grid = this.board.map((row) => row.map((v) => (v ? "#" : ".")));
        const p = this.piece;
        if (p && !this.done) for (const [cx, cy] of this.cells(p.type, p.rotation, p.x, p.y)) grid[cy][cx] = "@";
        const lines = [
          "Tetris (10 wide, 20 tall; # = settled block, @ = falling piece, . = empty). Pieces fall on their own.",
          "Falling piece: " + (p ? p.type : "-") + ". Next piece: " + (this.queue[0] || "-") + ".",
          "Score " + this.score + ", lines " + this.lines + "/" + target + ", level " + this.level() + ".",
        ];
        for (const row of grid) lines.push(row.join(""));
        lines.push("Moves: left, right, rotate (clockwise), soft drop, hard drop, noop.");
        if (this.done) lines.push(this.won ? "Target reached: you win." : "The stack reached the top: game over.");
        return lines.join("\n");
      },
    };
    return game;
  }

  AgentRL.register("tetris", { width: W, height: H, create });
})();
