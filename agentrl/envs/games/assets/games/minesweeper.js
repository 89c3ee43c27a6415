// Minesweeper: reveal every safe cell. Mines are placed after the first reveal (never in the 3x3
// around it). Mouse: click reveals, double-click toggles a flag.
(function () {
  "use strict";
  const W = 400, HEADER = 40, H = HEADER + 400;
  const NUM_COLORS = ["#000000", "#1030e0", "#108010", "#e01010", "#100080", "#801010", "#108080", "#000000", "#606060"];
  const MILESTONES = ["first reveal", "25% cleared", "50% cleared", "75% cleared", "cleared"];

  function intOpt(v, dflt, lo, hi) {
    let n = Math.round(Number(v === undefined || v === null ? dflt : v));
    if (!(n >= lo)) n = lo;
    if (n > hi) n = hi;
    return n;
  }

  function create(ctx, options) {
    options = options || {};
    let rowsOpt = options.rows, colsOpt = options.cols;
    if (Array.isArray(options.grid)) { rowsOpt = options.grid[0]; colsOpt = options.grid[1]; }
    const rows = intOpt(rowsOpt, 9, 2, 40), cols = intOpt(colsOpt, 9, 2, 40);
    const mineCount = intOpt(options.mines, 10, 1, rows * cols - 1);
    const safeCount = rows * cols - mineCount;
    const cell = Math.floor(Math.min(W / cols, (H - HEADER) / rows));
    const ox = Math.floor((W - cols * cell) / 2), oy = HEADER + Math.floor((H - HEADER - rows * cell) / 2);
    const moves = [];
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) moves.push("reveal " + r + " " + c);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) moves.push("flag " + r + " " + c);

    function neighbours(r, c) {
      const out = [];
      for (let dr = -1; dr <= 1; dr++) for (let dc = -1; dc <= 1; dc++) {
        const rr = r + dr, cc = c + dc;
        if ((dr || dc) && rr >= 0 && rr < rows && cc >= 0 && cc < cols) out.push([rr, cc]);
      }
      return out;
    }

    const game = {
      moves, milestones: MILESTONES.slice(), reached: [], score: 0, done: false, won: false,

      reset(rng) {
        this.rng = rng;
        this.mine = null; // rows x cols booleans once placed
        this.counts = null;
        this.revealed = Array.from({ length: rows }, () => new Array(cols).fill(false));
        this.flagged = Array.from({ length: rows }, () => new Array(cols).fill(false));
        this.exploded = null; this.pending = null; this.steps = 0;
        this.reached = []; this.score = 0; this.done = false; this.won = false;
      },

      _placeMines(r0, c0) {
        const near = (r, c) => Math.abs(r - r0) <= 1 && Math.abs(c - c0) <= 1;
        let cells = [];
        for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) if (!near(r, c)) cells.push([r, c]);
        if (cells.length < mineCount) {
          cells = [];
          for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) if (r !== r0 || c !== c0) cells.push([r, c]);
        }
        this.mine = Array.from({ length: rows }, () => new Array(cols).fill(false));
        for (let k = 0; k < mineCount; k++) { // partial Fisher-Yates
          const j = k + Math.floor(this.rng() * (cells.length - k));
          const t = cells[k]; cells[k] = cells[j]; cells[j] = t;
          this.mine[cells[k][0]][cells[k][1]] = true;
        }
        this.counts = Array.from({ length: rows }, (_, r) => Array.from({ length: cols }, (_, c) =>
          neighbours(r, c).filter(([rr, cc]) => this.mine[rr][cc]).length));
      },

      _update() {
        let n = 0;
        for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) if (this.revealed[r][c] && !this.mine[r][c]) n++;
        this.score = n;
        const marks = [n >= 1, n >= Math.ceil(0.25 * safeCount), n >= Math.ceil(0.5 * safeCount),
          n >= Math.ceil(0.75 * safeCount), n >= safeCount];
        marks.forEach((ok, i) => { if (ok && !this.reached.includes(MILESTONES[i])) this.reached.push(MILESTONES[i]); });
        this.won = n >= safeCount;
        this.done = this.won || this.exploded !== null;
      },

      move(name) {
        this._flush();
        return this._apply(name);
      },

      _apply(name) {
        if (this.done) return "the game is over";
        const m = /^(reveal|flag) (\d+) (\d+)$/.exec(String(name));
        if (!m) return "unknown move: " + name;
        const r = Number(m[2]), c = Number(m[3]);
        if (r >= rows || c >= cols) return "no such cell: " + r + " " + c;
        if (this.revealed[r][c]) return "cell " + r + " " + c + " is already revealed";
        if (m[1] === "flag") {
          this.flagged[r][c] = !this.flagged[r][c];
          this.steps++;
          return true;
        }
        if (this.flagged[r][c]) return "cell " + r + " " + c + " is flagged (flag it again to unflag)";
        if (this.mine === null) this._placeMines(r, c);
        this.steps++;
        if (this.mine[r][c]) {
          this.revealed[r][c] = true; this.exploded = [r, c];
          this._update();
          return true;
        }
        const stack = [[r, c]];
        this.revealed[r][c] = true;
        while (stack.length) {
          const [rr, cc] = stack.pop();
          if (this.counts[rr][cc] !== 0) continue;
          for (const [nr, nc] of neighbours(rr, cc)) {
            if (!this.revealed[nr][nc] && !this.flagged[nr][nc] && !this.mine[nr][nc]) {
              this.revealed[nr][nc] = true; stack.push([nr, nc]);
            }
          }
        }
        this._update();
        return true;
      },

      // A click's reveal waits one frame: a double-click (click, click, dblclick) flags instead.
      _flush() {
        if (this.pending) { const p = this.pending; this.pending = null; this._apply("reveal " + p[0] + " " + p[1]); }
      },

      update() { this._flush(); },

      _cellAt(x, y) {
        const r = Math.floor((y - oy) / cell), c = Math.floor((x - ox) / cell);
        return r >= 0 && r < rows && c >= 0 && c < cols ? [r, c] : null;
      },

      onPointer(type, x, y) {
        const rc = this._cellAt(x, y);
        if (type === "click") {
          if (!rc) return;
          if (this.pending && (this.pending[0] !== rc[0] || this.pending[1] !== rc[1])) this._flush();
          this.pending = rc;
        } else if (type === "dblclick") {
          if (this.pending && rc && this.pending[0] === rc[0] && this.pending[1] === rc[1]) this.pending = null;
          this._flush();
          if (rc) this._apply("flag " + rc[0] + " " + rc[1]);
        }
      },

      moveToInput(name) {
        const m = /^(reveal|flag) (\d+) (\d+)$/.exec(String(name));
        if (!m || Number(m[2]) >= rows || Number(m[3]) >= cols) return null;
        const x = ox + Number(m[3]) * cell + Math.floor(cell / 2), y = oy + Number(m[2]) * cell + Math.floor(cell / 2);
        return { type: m[1] === "reveal" ? "click" : "dblclick", x, y };
      },

      draw(g) {
        g.fillStyle = "#202028"; g.fillRect(0, 0, W, H);
        let flags = 0;
        for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) if (this.flagged[r][c]) flags++;
        g.fillStyle = "#ffffff"; g.font = "bold 22px sans-serif"; g.textBaseline = "middle"; g.textAlign = "left";
        g.fillText("Mines " + (mineCount - flags), 10, HEADER / 2);
        g.textAlign = "right";
        g.fillText("Cleared " + this.score + "/" + safeCount, W - 10, HEADER / 2);
        const showMines = this.done && this.mine !== null;
        g.textAlign = "center";
        g.font = "bold " + Math.max(8, Math.floor(cell * 0.6)) + "px sans-serif";
        for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) {
          const x = ox + c * cell, y = oy + r * cell;
          const mine = this.mine !== null && this.mine[r][c];
          if (this.revealed[r][c]) {
            g.fillStyle = mine ? "#ff2020" : "#e8e8e8"; g.fillRect(x, y, cell, cell);
          } else {
            g.fillStyle = "#34507e"; g.fillRect(x, y, cell, cell);
            g.fillStyle = "#5a7cb4"; g.fillRect(x + 2, y + 2, cell - 5, cell - 5);
          }
          g.strokeStyle = "#404048"; g.lineWidth = 1; g.strokeRect(x + 0.5, y + 0.5, cell - 1, cell - 1);
          const cx = x + cell / 2, cy = y + cell / 2;
          if (this.revealed[r][c] && !mine && this.counts[r][c] > 0) {
            g.fillStyle = NUM_COLORS[this.counts[r][c]]; g.fillText(String(this.counts[r][c]), cx, cy + 1);
          } else if (this.flagged[r][c] && !this.revealed[r][c]) {
            g.fillStyle = "#000000"; g.fillRect(cx - cell * 0.18, cy - cell * 0.3, Math.max(1, cell * 0.06), cell * 0.6);
            g.fillStyle = "#ff1010";
            g.beginPath(); g.moveTo(cx - cell * 0.14, cy - cell * 0.3); g.lineTo(cx + cell * 0.26, cy - cell * 0.14);
            g.lineTo(cx - cell * 0.14, cy + cell * 0.02); g.closePath(); g.fill();
          }
          if (mine && (showMines || this.revealed[r][c]) && !(this.flagged[r][c] && !this.revealed[r][c])) {
            g.fillStyle = "#000000"; g.beginPath(); g.arc(cx, cy, cell * 0.28, 0, Math.PI * 2); g.fill();
          }
        }
        if (this.done) {
          g.fillStyle = "rgba(0,0,0,0.7)"; g.fillRect(0, H / 2 - 30, W, 60);
          g.fillStyle = this.won ? "#40ff60" : "#ff5050"; g.font = "bold 30px sans-serif";
          g.fillText(this.won ? "CLEARED!" : "BOOM! You hit a mine", W / 2, H / 2);
        }
      },

      _grid(privileged) {
        const out = [];
        for (let r = 0; r < rows; r++) {
          let line = "";
          for (let c = 0; c < cols; c++) {
            const mine = this.mine !== null && this.mine[r][c];
            if (this.revealed[r][c]) line += mine ? "*" : (this.counts[r][c] ? String(this.counts[r][c]) : ".");
            else if (this.flagged[r][c]) line += "F";
            else if (mine && (privileged || this.done)) line += "*";
            else line += "#";
          }
          out.push(line);
        }
        return out;
      },

      state() {
        return {
          rows, cols, mines_count: mineCount, safe_count: safeCount,
          mines: this.mine === null ? null : this.mine.map((row) => row.map((x) => (x ? 1 : 0))),
          counts: this.counts === null ? null : this.counts.map((row) => row.slice()),
          revealed: this.revealed.map((row) => row.map((x) => (x ? 1 : 0))),
          flagged: this.flagged.map((row) => row.map((x) => (x ? 1 : 0))),
          exploded: this.exploded, steps: this.steps, grid: this._grid(true),
        };
      },

      describe() {
        const grid = this._grid(false);
        const pad = (s) => (String(s).length < 2 ? " " + s : String(s));
        let header = "   ";
        for (let c = 0; c < cols; c++) header += pad(c);
        const lines = grid.map((line, r) => pad(r) + " " + line.split("").map((ch) => " " + ch).join(""));
        let text = "Minesweeper " + rows + "x" + cols + " with " + mineCount + " mines. # hidden, F flag, . empty, digits = adjacent mines.\n";
        text += header + "\n" + lines.join("\n") + "\n";
        text += "Safe cells revealed: " + this.score + "/" + safeCount + ". Moves: 'reveal r c', 'flag r c' (row, column from 0).";
        if (this.exploded) text += " You revealed a mine: game over.";
        else if (this.won) text += " Cleared!";
        return text;
      },
    };
    return game;
  }

  AgentRL.register("minesweeper", { width: W, height: H, create });
})();
