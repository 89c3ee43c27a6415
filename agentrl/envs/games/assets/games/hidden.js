// Hidden object (FlashAdventure-like): a generated scene of 20-30 overlapping coloured shapes; find the 6
// targets named at the bottom. Some targets lie under a cup, hat or bucket: finding another target first
// shows a note ("the red key is under the blue cup") in the message line, only at that moment; click the
// cover to lift it, then click the target. Every click costs one of a limited number of clicks.
(function () {
  "use strict";
  const W = 512;
  const H = 512;
  const SCENE_H = 404;
  const SLOTS = 30;
  const KINDS = ["ball", "star", "heart", "diamond", "key", "ring", "bell", "moon", "leaf", "fish", "block", "triangle"];
  const COVER_KINDS = ["cup", "hat", "bucket"];
  const COLORS = {
    red: "#e6194b", blue: "#2f55d4", green: "#2ea043", yellow: "#ffe119", purple: "#8e24aa",
    orange: "#f58231", pink: "#ff6fd8", cyan: "#42d4f4", white: "#fafafa", brown: "#8b4513",
  };
  const COLOR_NAMES = Object.keys(COLORS);
  const SIZES = [22, 28, 34];
  const COVER_R = 42;
  const BG = "#5f7482";

  function shuffle(rng, list) {
    const a = list.slice();
    for (let i = a.length - 1; i > 0; i--) { const j = Math.floor(rng() * (i + 1)); const t = a[i]; a[i] = a[j]; a[j] = t; }
    return a;
  }

  function drawShape(ctx, o) {
    const { x, y, r } = o;
    const col = COLORS[o.colour];
    ctx.save();
    ctx.fillStyle = col; ctx.strokeStyle = "#111"; ctx.lineWidth = 2; ctx.lineJoin = "round";
    ctx.beginPath();
    switch (o.kind) {
      case "ball": ctx.arc(x, y, r * 0.92, 0, 7); ctx.fill(); ctx.stroke();
        ctx.beginPath(); ctx.fillStyle = "rgba(255,255,255,0.6)"; ctx.arc(x - r * 0.3, y - r * 0.3, r * 0.22, 0, 7); ctx.fill(); break;
      case "star": for (let i = 0; i < 10; i++) { const a = -Math.PI / 2 + i * Math.PI / 5; const rr = i % 2 ? r * 0.42 : r;
        if (i) ctx.lineTo(x + Math.cos(a) * rr, y + Math.sin(a) * rr); else ctx.moveTo(x + Math.cos(a) * rr, y + Math.sin(a) * rr); }
        ctx.closePath(); ctx.fill(); ctx.stroke(); break;
      case "heart": ctx.moveTo(x, y + r * 0.9); ctx.bezierCurveTo(x - r * 1.3, y - r * 0.1, x - r * 0.6, y - r * 1.1, x, y - r * 0.4);
        ctx.bezierCurveTo(x + r * 0.6, y - r * 1.1, x + r * 1.3, y - r * 0.1, x, y + r * 0.9); ctx.fill(); ctx.stroke(); break;
      case "diamond": ctx.moveTo(x, y - r); ctx.lineTo(x + r * 0.7, y); ctx.lineTo(x, y + r); ctx.lineTo(x - r * 0.7, y); ctx.closePath(); ctx.fill(); ctx.stroke(); break;
      case "key": ctx.arc(x - r * 0.5, y, r * 0.42, 0, 7); ctx.fill(); ctx.stroke();
        ctx.fillRect(x - r * 0.1, y - r * 0.14, r * 1.05, r * 0.28); ctx.strokeRect(x - r * 0.1, y - r * 0.14, r * 1.05, r * 0.28);
        ctx.fillRect(x + r * 0.55, y + r * 0.1, r * 0.18, r * 0.35); ctx.fillRect(x + r * 0.8, y + r * 0.1, r * 0.15, r * 0.28);
        ctx.beginPath(); ctx.fillStyle = BG; ctx.arc(x - r * 0.5, y, r * 0.15, 0, 7); ctx.fill(); break;
      case "ring": ctx.lineWidth = r * 0.34; ctx.strokeStyle = "#111"; ctx.arc(x, y, r * 0.7, 0, 7); ctx.stroke();
        ctx.lineWidth = r * 0.22; ctx.strokeStyle = col; ctx.stroke(); break;
      case "bell": ctx.moveTo(x - r * 0.9, y + r * 0.6); ctx.quadraticCurveTo(x - r * 0.6, y + r * 0.3, x - r * 0.55, y - r * 0.2);
        ctx.arc(x, y - r * 0.2, r * 0.55, Math.PI, 0); ctx.quadraticCurveTo(x + r * 0.6, y + r * 0.3, x + r * 0.9, y + r * 0.6);
        ctx.closePath(); ctx.fill(); ctx.stroke(); ctx.beginPath(); ctx.fillStyle = "#111"; ctx.arc(x, y + r * 0.75, r * 0.18, 0, 7); ctx.fill(); break;
      case "moon": ctx.save(); ctx.beginPath(); ctx.arc(x, y, r * 0.95, 0, 7); ctx.clip();
        ctx.beginPath(); ctx.arc(x, y, r * 0.95, 0, 7); ctx.arc(x + r * 0.5, y - r * 0.2, r * 0.8, 0, 7, true); ctx.fill(); ctx.restore();
        ctx.beginPath(); ctx.arc(x, y, r * 0.95, 0, 7); ctx.strokeStyle = "rgba(0,0,0,0.25)"; ctx.stroke(); break;
      case "leaf": ctx.ellipse(x, y, r, r * 0.5, -0.6, 0, 7); ctx.fill(); ctx.stroke();
        ctx.beginPath(); ctx.moveTo(x - r * 0.8, y + r * 0.55); ctx.lineTo(x + r * 0.8, y - r * 0.55); ctx.stroke(); break;
      case "fish": ctx.ellipse(x - r * 0.15, y, r * 0.7, r * 0.45, 0, 0, 7); ctx.fill(); ctx.stroke();
        ctx.beginPath(); ctx.moveTo(x + r * 0.5, y); ctx.lineTo(x + r, y - r * 0.45); ctx.lineTo(x + r, y + r * 0.45); ctx.closePath(); ctx.fill(); ctx.stroke();
        ctx.beginPath(); ctx.fillStyle = "#111"; ctx.arc(x - r * 0.5, y - r * 0.1, r * 0.1, 0, 7); ctx.fill(); break;
      case "block": ctx.rect(x - r * 0.75, y - r * 0.75, r * 1.5, r * 1.5); ctx.fill(); ctx.stroke(); break;
      case "triangle": ctx.moveTo(x, y - r * 0.9); ctx.lineTo(x + r * 0.9, y + r * 0.7); ctx.lineTo(x - r * 0.9, y + r * 0.7); ctx.closePath(); ctx.fill(); ctx.stroke(); break;
      case "cup": ctx.moveTo(x - r * 0.75, y - r * 0.8); ctx.lineTo(x + r * 0.55, y - r * 0.8); ctx.lineTo(x + r * 0.4, y + r * 0.85);
        ctx.lineTo(x - r * 0.6, y + r * 0.85); ctx.closePath(); ctx.fill(); ctx.stroke();
        ctx.beginPath(); ctx.lineWidth = r * 0.16; ctx.strokeStyle = col; ctx.arc(x + r * 0.62, y, r * 0.32, -1.4, 1.4); ctx.stroke(); break;
      case "hat": ctx.rect(x - r * 0.98, y + r * 0.35, r * 1.96, r * 0.3); ctx.rect(x - r * 0.6, y - r * 0.9, r * 1.2, r * 1.25); ctx.fill(); ctx.stroke();
        ctx.fillStyle = "#111"; ctx.fillRect(x - r * 0.6, y + r * 0.05, r * 1.2, r * 0.2); break;
      case "bucket": ctx.moveTo(x - r * 0.85, y - r * 0.55); ctx.lineTo(x + r * 0.85, y - r * 0.55); ctx.lineTo(x + r * 0.6, y + r * 0.9);
        ctx.lineTo(x - r * 0.6, y + r * 0.9); ctx.closePath(); ctx.fill(); ctx.stroke();
        ctx.beginPath(); ctx.arc(x, y - r * 0.55, r * 0.8, Math.PI, 0); ctx.stroke(); break;
      default: ctx.arc(x, y, r, 0, 7); ctx.fill(); ctx.stroke();
    }
    ctx.restore();
  }

  function create(_ctx, options) {
    const opts = options || {};
    const clickLimit = Math.max(6, Math.round(Number(opts.clicks) || 60));
    const hiddenCount = Math.max(0, Math.min(3, opts.hidden === undefined ? 2 : Math.round(Number(opts.hidden))));
    const moves = [];
    for (let i = 0; i < SLOTS; i++) moves.push("click " + i);

    const game = {
      moves, milestones: [], reached: [], score: 0, done: false, won: false,
      reset(rng) {
        const n = 20 + Math.floor(rng() * 11);
        const nCovers = hiddenCount + 2;
        const names = shuffle(rng, COLOR_NAMES.flatMap((c) => KINDS.map((k) => [c, k]))).slice(0, n - nCovers);
        const coverNames = shuffle(rng, COLOR_NAMES.flatMap((c) => COVER_KINDS.map((k) => [c, k]))).slice(0, nCovers);
        const ids = shuffle(rng, Array.from({ length: n }, (_, i) => i));
        const objs = [];
        const make = (ck, r) => { const o = { id: ids[objs.length], colour: ck[0], kind: ck[1], name: ck[0] + " " + ck[1], r,
          x: 0, y: 0, target: false, cover: false, hides: null, under: null, found: false, lifted: false }; objs.push(o); return o; };
        const place = (o) => { o.x = Math.round(o.r + 4 + rng() * (W - 2 * o.r - 8)); o.y = Math.round(o.r + 4 + rng() * (SCENE_H - 2 * o.r - 8)); };
        // covered targets (small) with their covers: placed apart from each other, drawn on top
        const pairs = [];
        for (let h = 0; h < hiddenCount; h++) {
          const t = make(names[h], SIZES[0]); const c = make(coverNames[h], COVER_R);
          t.target = true; c.cover = true; c.hides = t.id; t.under = c.id;
          for (let tries = 0; tries < 200; tries++) {
            place(c);
            if (pairs.every((p) => Math.hypot(p[1].x - c.x, p[1].y - c.y) > 2 * COVER_R + 12)) break;
          }
          t.x = c.x; t.y = c.y; pairs.push([t, c]);
        }
        const rest = [];
        const near = (o) => { // half of the clutter lands on top of something already there (partly hiding it)
          if (!rest.length || rng() < 0.5) { place(o); return; }
          const b = rest[Math.floor(rng() * rest.length)];
          o.x = Math.round(Math.min(W - o.r - 4, Math.max(o.r + 4, b.x + (rng() * 2 - 1) * 1.3 * b.r)));
          o.y = Math.round(Math.min(SCENE_H - o.r - 4, Math.max(o.r + 4, b.y + (rng() * 2 - 1) * 1.3 * b.r)));
        };
        for (let i = hiddenCount; i < names.length; i++) { const o = make(names[i], SIZES[Math.floor(rng() * 3)]); near(o); rest.push(o); }
        for (let i = hiddenCount; i < nCovers; i++) { const o = make(coverNames[i], COVER_R - 4); o.cover = true; place(o); rest.push(o); }
        const visibleTargets = rest.filter((o) => !o.cover).slice(0, 6 - hiddenCount);
        visibleTargets.forEach((o) => { o.target = true; });
        this.objects = objs;
        const restOrder = shuffle(rng, rest);
        this.order = restOrder.map((o) => o.id).concat(pairs.flatMap((p) => [p[0].id, p[1].id]));
        // every visible target must show a clickable point: move it until it does
        for (const t of visibleTargets) {
          for (let tries = 0; tries < 300 && !this.visiblePoint(t); tries++) place(t);
          if (!this.visiblePoint(t)) { this.order = this.order.filter((id) => id !== t.id); this.order.splice(this.order.length - 2 * hiddenCount, 0, t.id); }
        }
        // clues: finding visible target j shows where covered target j is
        this.clues = {};
        pairs.forEach((p, j) => { this.clues[visibleTargets[j].id] = p[0].id; });
        const targets = shuffle(rng, visibleTargets.concat(pairs.map((p) => p[0])));
        this.targets = targets.map((o) => o.id);
        this.milestones = targets.map((o) => "found " + o.name);
        this.reached = []; this.score = 0; this.done = false; this.won = false; this.clicks = 0;
        this.message = "Find the 6 objects listed below. Every click counts!";
      },
      byId(id) { return this.objects.find((o) => o.id === id); },
      present(o) { return !o.found; },
      topAt(x, y) {
        for (let i = this.order.length - 1; i >= 0; i--) {
          const o = this.byId(this.order[i]);
          if (!o.found && Math.hypot(o.x - x, o.y - y) <= o.r) return o;
        }
        return null;
      },
      visiblePoint(o) {
        if (o.found) return null;
        const f = [0, 0.45, -0.45, 0.8, -0.8];
        for (const a of f) for (const b of f) {
          const x = Math.round(o.x + a * o.r); const y = Math.round(o.y + b * o.r);
          if (Math.hypot(a, b) > 0.95 || y >= SCENE_H || y < 0 || x < 0 || x >= W) continue;
          if (this.topAt(x, y) === o) return { x, y };
        }
        return null;
      },
      spend() { this.clicks += 1; if (this.clicks >= clickLimit && !this.won) this.done = true; },
      clickObject(o) {
        this.spend();
        if (this.targets.includes(o.id)) {
          o.found = true;
          const name = "found " + o.name;
          if (!this.reached.includes(name)) this.reached.push(name);
          this.score = this.reached.length;
          this.message = "Found the " + o.name + "!";
          if (this.clues[o.id] !== undefined) {
            const t = this.byId(this.clues[o.id]); const c = this.byId(t.under);
            if (!c.lifted) this.message += " A note: the " + t.name + " is under the " + c.name + ".";
          }
          if (this.reached.length === this.targets.length) { this.won = true; this.done = true; this.message = "You found everything!"; }
          return;
        }
        if (o.cover && !o.lifted) {
          o.lifted = true;
          const dx = o.x + 1.6 * o.r < W - o.r ? 1.6 * o.r : -1.6 * o.r;
          o.x = Math.round(o.x + dx); o.y = Math.round(Math.max(o.r, o.y - 0.4 * o.r));
          this.order = [o.id].concat(this.order.filter((id) => id !== o.id)); // set aside, behind everything
          this.message = "You lift the " + o.name + (o.hides !== null ? ": something was under it!" : ": nothing under it.");
          return;
        }
        this.message = "That " + o.name + " is not on the list.";
      },
      move(name) {
        if (this.done) return "the game is over";
        const m = /^click (\d+)$/.exec(String(name).trim());
        if (!m) return "unknown move " + name;
        const id = Number(m[1]);
        if (id >= SLOTS) return "no object " + id;
        const o = this.byId(id);
        if (!o) return "no object " + id + " in this scene";
        if (o.found) return "object " + id + " was already found";
        if (!this.visiblePoint(o)) { this.spend(); this.message = "You can't see that there."; return true; }
        this.clickObject(o);
        return true;
      },
      onPointer(type, x, y) {
        if (type !== "click" || this.done || y >= SCENE_H) return;
        const o = this.topAt(x, y);
        if (o) { this.move("click " + o.id); return; }
        this.spend(); this.message = "Nothing there.";
      },
      moveToInput(name) {
        const m = /^click (\d+)$/.exec(String(name).trim());
        if (!m) return null;
        const o = this.byId(Number(m[1]));
        if (!o) return null;
        const p = this.visiblePoint(o);
        return p ? { type: "click", x: p.x, y: p.y } : null;
      },
      draw(ctx) {
        ctx.clearRect(0, 0, W, H);
        ctx.fillStyle = BG; ctx.fillRect(0, 0, W, SCENE_H);
        ctx.strokeStyle = "rgba(255,255,255,0.08)"; ctx.lineWidth = 1;
        for (let y = 20; y < SCENE_H; y += 40) { ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(W, y); ctx.stroke(); }
        for (const id of this.order) { const o = this.byId(id); if (!o.found) drawShape(ctx, o); }
        // clicks left
        ctx.fillStyle = "rgba(0,0,0,0.7)"; ctx.fillRect(W - 118, 4, 114, 22);
        ctx.fillStyle = "#fff"; ctx.font = "bold 14px sans-serif"; ctx.textBaseline = "middle"; ctx.textAlign = "left";
        ctx.fillText("Clicks left: " + Math.max(0, clickLimit - this.clicks), W - 112, 15);
        // message + target list
        ctx.fillStyle = "#101820"; ctx.fillRect(0, SCENE_H, W, H - SCENE_H);
        ctx.fillStyle = "#ffe97a"; ctx.font = "bold 13px sans-serif";
        let msg = this.message; while (ctx.measureText(msg).width > W - 10 && msg.length > 4) msg = msg.slice(0, -1);
        ctx.fillText(msg, 5, SCENE_H + 13);
        this.targets.forEach((id, i) => {
          const o = this.byId(id);
          const x = 4 + (i % 3) * 169; const y = SCENE_H + 28 + Math.floor(i / 3) * 40;
          ctx.fillStyle = o.found ? "#1e5e2a" : "#2c3e50"; ctx.fillRect(x, y, 165, 36);
          ctx.fillStyle = COLORS[o.colour]; ctx.fillRect(x + 5, y + 8, 20, 20); ctx.strokeStyle = "#000"; ctx.lineWidth = 1; ctx.strokeRect(x + 5, y + 8, 20, 20);
          ctx.fillStyle = "#fff"; ctx.font = "bold 15px sans-serif";
          if (ctx.measureText(o.name.toUpperCase()).width > 130) ctx.font = "bold 12px sans-serif";
          ctx.fillText(o.name.toUpperCase(), x + 32, y + 18);
          if (o.found) { ctx.strokeStyle = "#7CFC00"; ctx.lineWidth = 3; ctx.beginPath(); ctx.moveTo(x + 30, y + 18); ctx.lineTo(x + 160, y + 18); ctx.stroke(); }
        });
        if (this.done) {
          ctx.fillStyle = "rgba(0,0,0,0.6)"; ctx.fillRect(0, 170, W, 60);
          ctx.fillStyle = "#fff"; ctx.font = "bold 30px sans-serif"; ctx.textAlign = "center";
          ctx.fillText(this.won ? "ALL FOUND!" : "OUT OF CLICKS", W / 2, 200); ctx.textAlign = "left";
        }
      },
      state() {
        return {
          objects: this.objects.map((o) => ({ ...o, visible: Boolean(this.visiblePoint(o)) })), order: this.order.slice(),
          targets: this.targets.slice(), clues: { ...this.clues }, clicks: this.clicks, click_limit: clickLimit,
          message: this.message, reached: this.reached.slice(), won: this.won, done: this.done,
        };
      },
      describe() {
        const find = this.targets.map((id) => { const o = this.byId(id); return o.name + (o.found ? " (found)" : ""); });
        const seen = this.objects.filter((o) => this.visiblePoint(o)).sort((a, b) => a.id - b.id).map((o) => o.id + ": " + o.name);
        return "Find: " + find.join(", ") + ". Clicks left: " + Math.max(0, clickLimit - this.clicks) +
          ". Visible objects (id: name): " + seen.join(", ") + ". Message: " + this.message;
      },
    };
    return game;
  }

  AgentRL.register("hidden", { width: W, height: H, create });
})();
