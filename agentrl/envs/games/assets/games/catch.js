// Catch: balls fall down an 8x8 grid; move the paddle under them. A small arcade game whose
// pixels say everything (the classic first test of an RL agent from pixels).
(function () {
  "use strict";
  const CELL = 20;
  AgentRL.register("catch", {
    width: 8 * CELL,
    height: 9 * CELL,
    create(ctx, options) {
      const cols = 8, rows = 8;
      const lives = Math.max(1, options.lives || 3);
      const targets = options.targets || [5, 10, 20, 30];
      return {
        moves: ["left", "stay", "right"],
        milestones: targets.map((t) => "caught " + t),
        reached: [], score: 0, done: false, won: false,
        reset(rng) {
          this.rng = rng; this.paddle = Math.floor(cols / 2); this.misses = 0; this.score = 0;
          this.reached = []; this.done = false; this.won = false; this.balls = 0;
          this.spawn();
        },
        spawn() { this.ball = { x: Math.floor(this.rng() * cols), y: 0 }; this.balls += 1; },
        move(name) {
          if (this.done) return "the game is over";
          if (name === "left") this.paddle = Math.max(0, this.paddle - 1);
          else if (name === "right") this.paddle = Math.min(cols - 1, this.paddle + 1);
          else if (name !== "stay") return "unknown move " + name + "; moves: left, stay, right";
          this.fall();
          return true;
        },
        fall() {
          this.ball.y += 1;
          if (this.ball.y < rows - 1) return;
          if (this.ball.x === this.paddle) {
            this.score += 1;
            for (const t of targets) if (this.score >= t && !this.reached.includes("caught " + t)) this.reached.push("caught " + t);
            if (this.score >= targets[targets.length - 1]) { this.won = true; this.done = true; return; }
          } else {
            this.misses += 1;
            if (this.misses >= lives) { this.done = true; return; }
          }
          this.spawn();
        },
        onKey(key) {
          if (key === "ArrowLeft") this.move("left");
          else if (key === "ArrowRight") this.move("right");
          else if (key === " " || key === "ArrowDown") this.move("stay");
        },
        onPointer(type, x) {
          if (type !== "click") return;
          const col = Math.floor(x / CELL);
          this.move(col < this.paddle ? "left" : col > this.paddle ? "right" : "stay");
        },
        moveToInput(name) {
          return { type: "key", key: name === "left" ? "ArrowLeft" : name === "right" ? "ArrowRight" : " " };
        },
        draw(g) {
          g.fillStyle = "#101018"; g.fillRect(0, 0, cols * CELL, 9 * CELL);
          g.fillStyle = "#ffd23f";
          g.fillRect(this.ball.x * CELL + 3, this.ball.y * CELL + 3, CELL - 6, CELL - 6);
          g.fillStyle = "#3fa7ff";
          g.fillRect(this.paddle * CELL, (rows - 1) * CELL + 6, CELL, CELL - 8);
          g.fillStyle = "#ffffff"; g.font = "12px sans-serif";
          g.fillText("caught " + this.score + "  missed " + this.misses + "/" + lives, 4, 9 * CELL - 5);
        },
        state() {
          return { ball: this.ball, paddle: this.paddle, score: this.score, misses: this.misses, lives, cols, rows };
        },
        describe() {
          return `ball at column ${this.ball.x + 1}, row ${this.ball.y + 1} of ${rows}; paddle at column ${this.paddle + 1}; caught ${this.score}, missed ${this.misses} of ${lives}`;
        },
      };
    },
  });
})();
