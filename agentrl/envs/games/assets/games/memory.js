// Memory (concentration): cards lie face down in a grid, each symbol on exactly two cards. Flip two
// cards per turn: a matching pair stays face up; otherwise both stay visible until the next flip,
// which turns them back first. Purely move-based (no timers). Score: pairs found; a flip limit.
(function () {
  "use strict";
  const W = 480;
  const TOP = 60;
  const H = TOP + 480;
  const COLORS = ["#e6194b", "#3cb44b", "#ffe119", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6",
    "#bfef45", "#fabed4", "#469990", "#dcbeff", "#9a6324", "#fffac8", "#800000", "#aaffc3"];
  const MAX_PAIRS = 26;

  function create(ctx, options) {
    const opts = options || {};
    const pairs = Math.max(2, Math.min(MAX_PAIRS, Math.floor(Number(opts.pairs) || 8)));
    const nCards = 2 * pairs;
    const flipLimit = Math.max(1, Math.floor(Number(opts.flips) || 40));
    const cols = nCards <= 16 ? 4 : Math.ceil(Math.sqrt(nCards));
    const rows = Math.ceil(nCards / cols);
    const cell = Math.floor(Math.min(W / cols, (H - TOP) / rows));
    const left = Math.floor((W - cols * cell) / 2);
    // Milestones: a quarter, a half, three quarters and all of the pairs (duplicates dropped).
    const goals = [];
    for (let k = 1; k <= 4; k++) {
      const g = Math.max(1, Math.round((pairs * k) / 4));
      if (goals.indexOf(g) < 0) goals.push(g);
    }
    const label = (n) => n + (n === 1 ? " pair" : " pairs");

    const moves = [];
    for (let i = 0; i < nCards; i++) moves.push("flip " + i);

    const game = {
      moves,
      milestones: goals.map(label),
      reached: [],
      score: 0,
      done: false,
      won: false,
      layout: [],
      matched: [],
      open: [], // face-up cards of the current turn (0, 1 or 2 unmatched cards)
      flips: 0,
      lastResult: "",

      reset(rng) {
        const deck = [];
        for (let p = 0; p < pairs; p++) deck.push(p, p);
        for (let i = deck.length - 1; i > 0; i--) {
          const j = Math.floor(rng() * (i + 1));
          const t = deck[i]; deck[i] = deck[j]; deck[j] = t;
        }
        this.layout = deck;
        this.matched = new Array(nCards).fill(false);
        this.open = [];
        this.flips = 0;
        this.score = 0;
        this.reached = [];
        this.done = false;
        this.won = false;
        this.lastResult = "";
      },

      symbol(p) { return String.fromCharCode(65 + p); },

      faceUp(i) { return this.matched[i] || this.open.indexOf(i) >= 0; },

      move(name) {
        if (this.done) return "the game is over";
        const m = /^flip (\d+)$/.exec(String(name).trim());
        if (!m) return "unknown move: " + name + " (use 'flip N', N = 0-" + (nCards - 1) + ")";
        const i = Number(m[1]);
        if (i >= nCards) return "no card " + i + " (cards are 0-" + (nCards - 1) + ")";
        if (this.matched[i]) return "card " + i + " is already face up (matched)";
        if (this.open.length === 1 && this.open[0] === i) return "card " + i + " is already face up";
        if (this.open.length === 2) this.open = []; // the last turn's mismatch turns back
        this.open.push(i);
        this.flips += 1;
        if (this.open.length === 2) {
          const [a, b] = this.open;
          if (this.layout[a] === this.layout[b]) {
            this.matched[a] = this.matched[b] = true;
            this.open = [];
            this.score += 1;
            this.lastResult = "pair " + this.symbol(this.layout[a]) + " found";
            for (const g of goals) if (this.score >= g && this.reached.indexOf(label(g)) < 0) this.reached.push(label(g));
          } else {
            this.lastResult = "no match";
          }
        } else {
          this.lastResult = "";
        }
        if (this.score >= pairs) this.won = true;
        if (this.won || this.flips >= flipLimit) this.done = true;
        return true;
      },

      cardAt(x, y) {
        const c = Math.floor((x - left) / cell); const r = Math.floor((y - TOP) / cell);
        if (x < left || y < TOP || c < 0 || c >= cols || r < 0 || r >= rows) return null;
        const i = r * cols + c;
        return i < nCards ? i : null;
      },

      onPointer(type, x, y) {
        if (type !== "click") return;
        const i = this.cardAt(x, y);
        if (i !== null) this.move("flip " + i);
      },

      moveToInput(name) {
        const m = /^flip (\d+)$/.exec(String(name).trim());
        if (!m || Number(m[1]) >= nCards) return null;
        const i = Number(m[1]);
        return { type: "click", x: left + (i % cols) * cell + cell / 2, y: TOP + Math.floor(i / cols) * cell + cell / 2 };
      },

      draw(g) {
        g.fillStyle = "#0b1a2e";
        g.fillRect(0, 0, W, H);
        g.fillStyle = "#ffffff";
        g.font = "bold 24px sans-serif";
        g.textBaseline = "middle";
        g.textAlign = "left";
        g.fillText("Pairs " + this.score + "/" + pairs, 10, TOP / 2);
        g.textAlign = "right";
        g.fillText("Flips " + (flipLimit - this.flips), W - 10, TOP / 2);
        g.textAlign = "center";
        g.font = "16px sans-serif";
        g.fillText(this.won ? "WON" : this.done ? "NO FLIPS LEFT" : this.lastResult, W / 2, TOP / 2);
        const pad = Math.max(3, Math.floor(cell * 0.06));
        for (let i = 0; i < nCards; i++) {
          const x = left + (i % cols) * cell + pad; const y = TOP + Math.floor(i / cols) * cell + pad;
          const s = cell - 2 * pad;
          if (this.faceUp(i)) {
            const p = this.layout[i];
            g.fillStyle = COLORS[p % COLORS.length];
            g.fillRect(x, y, s, s);
            g.fillStyle = "#000000";
            g.font = "bold " + Math.floor(s * 0.6) + "px sans-serif";
            g.fillText(this.symbol(p), x + s / 2, y + s / 2 + 2);
            if (this.matched[i]) {
              g.strokeStyle = "#ffffff";
              g.lineWidth = Math.max(2, Math.floor(pad * 0.8));
              g.strokeRect(x + 2, y + 2, s - 4, s - 4);
            }
          } else {
            g.fillStyle = "#5a6f8c";
            g.fillRect(x, y, s, s);
            g.fillStyle = "#3a4a62";
            g.fillRect(x + s * 0.2, y + s * 0.2, s * 0.6, s * 0.6);
          }
        }
      },

      state() {
        return {
          layout: this.layout.slice(),
          matched: this.matched.slice(),
          open: this.open.slice(),
          pairs,
          rows,
          cols,
          flips: this.flips,
          flipsLeft: flipLimit - this.flips,
          score: this.score,
        };
      },

      describe() {
        const lines = ["Memory: " + nCards + " cards in " + rows + " rows of " + cols + " (card N = row*" + cols + "+col); ?? = face down, [X] = matched, X = flipped this turn."];
        for (let r = 0; r < rows; r++) {
          const row = [];
          for (let c = 0; c < cols; c++) {
            const i = r * cols + c;
            if (i >= nCards) break;
            const t = this.matched[i] ? "[" + this.symbol(this.layout[i]) + "]" : this.open.indexOf(i) >= 0 ? " " + this.symbol(this.layout[i]) + " " : "?? ";
            row.push(String(i).padStart(2) + ":" + t);
          }
          lines.push(row.join("  "));
        }
        if (this.lastResult) lines.push("Last turn: " + this.lastResult + ".");
        lines.push("Pairs found " + this.score + "/" + pairs + ", flips left " + (flipLimit - this.flips) + ".");
        lines.push("Flip a face-down card with 'flip N'. Two flipped cards that differ turn back at your next flip.");
        return lines.join("\n");
      },
    };
    return game;
  }

  AgentRL.register("memory", { width: W, height: H, create });
})();
