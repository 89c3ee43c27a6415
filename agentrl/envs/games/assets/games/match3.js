// Match-3 (Candy-Crush-like, LMGame-Bench style): swap two neighbouring tiles to line up 3+ of a
// colour; matches clear, tiles fall, new tiles drop in from the rng and cascades resolve.
// Score: 10 per cleared tile (cascades included). A fixed number of moves; reach the targets.
(function () {
  "use strict";
  const N = 8;
  const CELL = 60;
  const TOP = 60;
  const W = N * CELL;
  const H = TOP + N * CELL;
  const COLORS = ["#e6194b", "#ffe119", "#3cb44b", "#4363d8", "#b04fe0", "#f5f5f5", "#f58231", "#42d4f4"];
  const LETTERS = ["R", "Y", "G", "B", "P", "W", "O", "C"];
  const NAMES = ["red", "yellow", "green", "blue", "purple", "white", "orange", "cyan"];

  function buildMoves() {
    const moves = [];
    for (let r = 0; r < N; r++) {
      for (let c = 0; c < N; c++) {
        if (c < N - 1) moves.push("swap " + r + " " + c + " right");
        if (r < N - 1) moves.push("swap " + r + " " + c + " down");
      }
    }
    return moves;
  }

  // Cells in a horizontal or vertical run of 3+ equal (non-null) tiles.
  function findMatches(b) {
    const hit = [];
    for (let r = 0; r < N; r++) hit.push(new Array(N).fill(false));
    let any = false;
    for (let r = 0; r < N; r++) {
      let c = 0;
      while (c < N) {
        let e = c + 1;
        while (e < N && b[r][c] !== null && b[r][e] === b[r][c]) e++;
        if (b[r][c] !== null && e - c >= 3) { for (let k = c; k < e; k++) hit[r][k] = true; any = true; }
        c = e;
      }
    }
    for (let c = 0; c < N; c++) {
      let r = 0;
      while (r < N) {
        let e = r + 1;
        while (e < N && b[r][c] !== null && b[e][c] === b[r][c]) e++;
        if (b[r][c] !== null && e - r >= 3) { for (let k = r; k < e; k++) hit[k][c] = true; any = true; }
        r = e;
      }
    }
    return any ? hit : null;
  }

  function swapCells(b, r1, c1, r2, c2) {
    const t = b[r1][c1]; b[r1][c1] = b[r2][c2]; b[r2][c2] = t;
  }

  function parseMove(name) {
    const m = /^swap (\d+) (\d+) (right|down)$/.exec(String(name).trim());
    if (!m) return null;
    const r = Number(m[1]); const c = Number(m[2]);
    const r2 = m[3] === "down" ? r + 1 : r; const c2 = m[3] === "right" ? c + 1 : c;
    if (r >= N || c >= N || r2 >= N || c2 >= N) return null;
    return [r, c, r2, c2];
  }

  function legalSwaps(b) {
    const out = [];
    for (let r = 0; r < N; r++) {
      for (let c = 0; c < N; c++) {
        for (const [dr, dc, dir] of [[0, 1, "right"], [1, 0, "down"]]) {
          const r2 = r + dr; const c2 = c + dc;
          if (r2 >= N || c2 >= N || b[r][c] === b[r2][c2]) continue;
          swapCells(b, r, c, r2, c2);
          const ok = findMatches(b) !== null;
          swapCells(b, r, c, r2, c2);
          if (ok) out.push("swap " + r + " " + c + " " + dir);
        }
      }
    }
    return out;
  }

  function create(ctx, options) {
    const opts = options || {};
    const nColors = Math.max(4, Math.min(COLORS.length, Math.floor(Number(opts.colors) || 6)));
    const moveLimit = Math.max(1, Math.floor(Number(opts.moves) || 30));
    let targets = Array.isArray(opts.targets) && opts.targets.length ? opts.targets.map(Number) : [300, 600, 1000, 1500];
    targets = targets.filter((t) => isFinite(t) && t > 0).sort((a, b) => a - b);
    if (!targets.length) targets = [300, 600, 1000, 1500];

    const game = {
      moves: buildMoves(),
      milestones: targets.map((t) => "score " + t),
      reached: [],
      score: 0,
      done: false,
      won: false,
      board: [],
      movesLeft: moveLimit,
      selected: null,
      dragFrom: null,
      suppressClick: false,
      lastCleared: 0,
      lastChain: 0,
      shuffles: 0,
      rng: null,

      randomColor() { return Math.floor(this.rng() * nColors); },

      // A fresh board with no run of three and at least one legal swap.
      generate() {
        for (;;) {
          const b = [];
          for (let r = 0; r < N; r++) {
            b.push([]);
            for (let c = 0; c < N; c++) {
              let v;
              do {
                v = this.randomColor();
              } while ((c >= 2 && b[r][c - 1] === v && b[r][c - 2] === v) || (r >= 2 && b[r - 1][c] === v && b[r - 2][c] === v));
              b[r].push(v);
            }
          }
          if (legalSwaps(b).length) return b;
        }
      },

      // Shuffle the tiles in place (Fisher-Yates from the rng) until no runs and a legal swap exist.
      reshuffle() {
        this.shuffles += 1;
        for (let attempt = 0; attempt < 100; attempt++) {
          const flat = [];
          for (let r = 0; r < N; r++) for (let c = 0; c < N; c++) flat.push(this.board[r][c]);
          for (let i = flat.length - 1; i > 0; i--) {
            const j = Math.floor(this.rng() * (i + 1));
            const t = flat[i]; flat[i] = flat[j]; flat[j] = t;
          }
          const b = [];
          for (let r = 0; r < N; r++) b.push(flat.slice(r * N, r * N + N));
          if (findMatches(b) === null && legalSwaps(b).length) { this.board = b; return; }
        }
        this.board = this.generate();
      },

      reset(rng) {
        this.rng = rng;
        this.score = 0;
        this.reached = [];
        this.done = false;
        this.won = false;
        this.movesLeft = moveLimit;
        this.selected = null;
        this.dragFrom = null;
        this.suppressClick = false;
        this.lastCleared = 0;
        this.lastChain = 0;
        this.shuffles = 0;
        this.board = this.generate();
      },

      // Clear runs, drop tiles, refill from the rng, repeat; returns [tiles cleared, cascade depth].
      resolve() {
        let chain = 0; let cleared = 0;
        for (;;) {
          const hit = findMatches(this.board);
          if (!hit) break;
          chain += 1;
          let n = 0;
          for (let r = 0; r < N; r++) for (let c = 0; c < N; c++) if (hit[r][c]) { this.board[r][c] = null; n++; }
          cleared += n;
          this.score += 10 * n;
          for (let c = 0; c < N; c++) {
            let w = N - 1;
            for (let r = N - 1; r >= 0; r--) {
              if (this.board[r][c] !== null) { this.board[w][c] = this.board[r][c]; if (w !== r) this.board[r][c] = null; w--; }
            }
            for (let r = w; r >= 0; r--) this.board[r][c] = this.randomColor();
          }
        }
        return [cleared, chain];
      },

      move(name) {
        if (this.done) return "the game is over";
        const p = parseMove(name);
        if (!p) return "unknown move: " + name + " (use 'swap ROW COL right' or 'swap ROW COL down', 0-" + (N - 1) + ")";
        const [r1, c1, r2, c2] = p;
        if (this.board[r1][c1] === this.board[r2][c2]) return "no match: both tiles are " + NAMES[this.board[r1][c1]];
        swapCells(this.board, r1, c1, r2, c2);
        if (findMatches(this.board) === null) {
          swapCells(this.board, r1, c1, r2, c2);
          return "no match: swapping (" + r1 + "," + c1 + ") and (" + r2 + "," + c2 + ") lines up nothing";
        }
        this.selected = null;
        this.movesLeft -= 1;
        const [cleared, chain] = this.resolve();
        this.lastCleared = cleared; this.lastChain = chain;
        for (let i = 0; i < targets.length; i++) {
          const m = this.milestones[i];
          if (this.score >= targets[i] && this.reached.indexOf(m) < 0) this.reached.push(m);
        }
        if (this.score >= targets[targets.length - 1]) this.won = true;
        if (this.won || this.movesLeft <= 0) this.done = true;
        if (!this.done && legalSwaps(this.board).length === 0) this.reshuffle();
        return true;
      },

      cellAt(x, y) {
        const c = Math.floor(x / CELL); const r = Math.floor((y - TOP) / CELL);
        if (y < TOP || r < 0 || r >= N || c < 0 || c >= N) return null;
        return [r, c];
      },

      swapName(a, b) {
        if (!a || !b) return null;
        const dr = b[0] - a[0]; const dc = b[1] - a[1];
        if (Math.abs(dr) + Math.abs(dc) !== 1) return null;
        const r = Math.min(a[0], b[0]); const c = Math.min(a[1], b[1]);
        return "swap " + r + " " + c + " " + (dr !== 0 ? "down" : "right");
      },

      // Drag from a tile to a neighbour, or click two neighbouring tiles in turn.
      onPointer(type, x, y) {
        const cell = this.cellAt(x, y);
        if (type === "down") { this.dragFrom = cell; return; }
        if (type === "up") {
          const from = this.dragFrom; this.dragFrom = null;
          if (from && cell && (from[0] !== cell[0] || from[1] !== cell[1])) {
            this.suppressClick = true;
            const name = this.swapName(from, cell);
            this.selected = null;
            if (name) this.move(name);
          }
          return;
        }
        if (type === "click") {
          if (this.suppressClick) { this.suppressClick = false; return; }
          if (!cell || this.done) { this.selected = null; return; }
          const sel = this.selected;
          if (sel && sel[0] === cell[0] && sel[1] === cell[1]) { this.selected = null; return; }
          const name = this.swapName(sel, cell);
          if (name) { this.selected = null; this.move(name); return; }
          this.selected = cell;
        }
      },

      moveToInput(name) {
        const p = parseMove(name);
        if (!p) return null;
        const [r1, c1, r2, c2] = p;
        return { type: "drag", x1: c1 * CELL + CELL / 2, y1: TOP + r1 * CELL + CELL / 2, x2: c2 * CELL + CELL / 2, y2: TOP + r2 * CELL + CELL / 2 };
      },

      draw(g) {
        g.fillStyle = "#101018";
        g.fillRect(0, 0, W, H);
        g.fillStyle = "#ffffff";
        g.font = "bold 24px sans-serif";
        g.textBaseline = "middle";
        g.textAlign = "left";
        g.fillText("Score " + this.score, 10, TOP / 2);
        g.textAlign = "right";
        g.fillText("Moves " + this.movesLeft, W - 10, TOP / 2);
        g.textAlign = "center";
        const next = targets.find((t) => this.score < t);
        g.font = "16px sans-serif";
        g.fillText(this.won ? "WON" : this.done ? "OUT OF MOVES" : "goal " + next, W / 2, TOP / 2);
        for (let r = 0; r < N; r++) {
          for (let c = 0; c < N; c++) {
            const x = c * CELL; const y = TOP + r * CELL;
            g.fillStyle = (r + c) % 2 ? "#1c1c28" : "#24243a";
            g.fillRect(x, y, CELL, CELL);
            const v = this.board[r][c];
            if (v === null) continue;
            g.fillStyle = COLORS[v];
            g.fillRect(x + 6, y + 6, CELL - 12, CELL - 12);
            g.fillStyle = "#000000";
            g.font = "bold 22px sans-serif";
            g.fillText(LETTERS[v], x + CELL / 2, y + CELL / 2 + 1);
          }
        }
        if (this.selected) {
          g.strokeStyle = "#ffffff";
          g.lineWidth = 4;
          g.strokeRect(this.selected[1] * CELL + 2, TOP + this.selected[0] * CELL + 2, CELL - 4, CELL - 4);
        }
      },

      state() {
        return {
          board: this.board.map((row) => row.slice()),
          size: N,
          colors: nColors,
          score: this.score,
          movesLeft: this.movesLeft,
          moveLimit,
          targets: targets.slice(),
          selected: this.selected,
          lastCleared: this.lastCleared,
          lastChain: this.lastChain,
          shuffles: this.shuffles,
          legal: legalSwaps(this.board),
        };
      },

      describe() {
        const lines = [];
        lines.push("Match-3, " + N + "x" + N + " board (row 0 at the top, column 0 at the left). Colours: " +
          LETTERS.slice(0, nColors).map((l, i) => l + "=" + NAMES[i]).join(", ") + ".");
        lines.push("    " + Array.from({ length: N }, (_, c) => String(c)).join(" "));
        for (let r = 0; r < N; r++) lines.push(r + " | " + this.board[r].map((v) => (v === null ? "." : LETTERS[v])).join(" "));
        const next = targets.find((t) => this.score < t);
        lines.push("Score " + this.score + ", moves left " + this.movesLeft + (next !== undefined ? ", next target " + next : ", all targets reached") + ".");
        lines.push("Swap two neighbouring tiles with 'swap ROW COL right' or 'swap ROW COL down'; the swap must line up 3+ tiles of a colour.");
        return lines.join("\n");
      },
    };
    return game;
  }

  AgentRL.register("match3", { width: W, height: H, create });
})();
