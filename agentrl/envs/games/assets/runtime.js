// AgentRL game runtime: a virtual clock, a seeded PRNG, the game registry, frame capture.
// Injected before any page script, so the games' requestAnimationFrame, timers, Date and
// performance.now all read the env's clock: time moves only when the env steps.
(function () {
  "use strict";
  const EPOCH = 1700000000000;
  const clock = { now: 0, timers: [], rafs: [], nextId: 1 };
  const RealDate = Date;

  function VirtualDate(...args) {
    if (!(this instanceof VirtualDate)) return new RealDate(EPOCH + clock.now).toString();
    return args.length ? new RealDate(...args) : new RealDate(EPOCH + clock.now);
  }
  VirtualDate.prototype = RealDate.prototype;
  VirtualDate.now = () => EPOCH + Math.floor(clock.now);
  VirtualDate.UTC = RealDate.UTC;
  VirtualDate.parse = RealDate.parse;
  window.Date = VirtualDate;
  const perfNow = () => clock.now;
  try { Object.defineProperty(performance, "now", { value: perfNow, configurable: true }); } catch (e) { performance.now = perfNow; }

  function addTimer(fn, ms, args, repeat) {
    const id = clock.nextId++;
    const delay = Math.max(0, Number(ms) || 0);
    clock.timers.push({ id, at: clock.now + delay, fn, args, repeat: repeat ? Math.max(1, delay) : 0 });
    return id;
  }
  function clearTimer(id) { clock.timers = clock.timers.filter((t) => t.id !== id); }
  window.setTimeout = (fn, ms, ...args) => addTimer(fn, ms, args, false);
  window.setInterval = (fn, ms, ...args) => addTimer(fn, ms, args, true);
  window.clearTimeout = clearTimer;
  window.clearInterval = clearTimer;
  window.requestAnimationFrame = (cb) => { const id = clock.nextId++; clock.rafs.push({ id, cb }); return id; };
  window.cancelAnimationFrame = (id) => { clock.rafs = clock.rafs.filter((r) => r.id !== id); };

  function runTimersUntil(t) {
    for (;;) {
      let next = null;
      for (const timer of clock.timers) if (timer.at <= t && (next === null || timer.at < next.at || (timer.at === next.at && timer.id < next.id))) next = timer;
      if (next === null) return;
      clock.now = Math.max(clock.now, next.at);
      if (next.repeat) next.at += next.repeat; else clearTimer(next.id);
      if (typeof next.fn === "function") next.fn(...(next.args || []));
    }
  }

  // Advance the clock by `frames` frames of `frameMs`: due timers fire in order, then one animation frame.
  clock.advance = function (frames, frameMs) {
    const dt = frameMs || 1000 / 60;
    for (let i = 0; i < frames; i++) {
      const target = clock.now + dt;
      runTimersUntil(target);
      clock.now = target;
      const due = clock.rafs;
      clock.rafs = [];
      for (const r of due) r.cb(clock.now);
    }
  };
  window.__agentrlClock = clock;

  // mulberry32: a small, fast, seedable PRNG; games must draw only from the rng they are given.
  function rng(seed) {
    let a = (seed >>> 0) || 0x9e3779b9;
    return function () {
      a |= 0; a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // wallNow: real milliseconds, for what runs in real time (a page's loading), never for the game's own time
  const AgentRL = { games: {}, game: null, spec: null, canvas: null, ctx: null, rng, wallNow: () => RealDate.now() };
  AgentRL.register = function (name, spec) { AgentRL.games[name] = spec; };

  function asList(x) { return Array.isArray(x) ? x.slice() : Array.from(x || []); }

  AgentRL.status = function () {
    const g = AgentRL.game;
    return {
      score: Number(g.score) || 0,
      reached: asList(g.reached),
      milestones: asList(g.milestones),
      done: Boolean(g.done),
      won: Boolean(g.won),
      ready: g.ready !== false, // a game that loads something (Ruffle) sets ready=false until it has
    };
  };

  // Start `name` with `options` and `seed`: a fresh canvas, a fresh game, its first frame drawn.
  AgentRL.start = function (name, options, seed) {
    const spec = AgentRL.games[name];
    if (!spec) throw new Error("unknown game " + name + "; registered: " + Object.keys(AgentRL.games).join(", "));
    clock.timers = []; clock.rafs = [];
    document.body.innerHTML = "";
    document.body.style.margin = "0";
    const canvas = document.createElement("canvas");
    canvas.width = spec.width; canvas.height = spec.height; canvas.id = "game";
    canvas.tabIndex = 0;
    document.body.appendChild(canvas);
    AgentRL.canvas = canvas; AgentRL.ctx = canvas.getContext("2d");
    AgentRL.spec = spec;
    const game = spec.create(AgentRL.ctx, options || {});
    AgentRL.game = game;
    game.reset(rng(seed >>> 0));
    canvas.addEventListener("mousedown", (e) => game.onPointer && game.onPointer("down", e.offsetX, e.offsetY));
    canvas.addEventListener("mouseup", (e) => game.onPointer && game.onPointer("up", e.offsetX, e.offsetY));
    canvas.addEventListener("mousemove", (e) => game.onPointer && game.onPointer("move", e.offsetX, e.offsetY));
    canvas.addEventListener("click", (e) => game.onPointer && game.onPointer("click", e.offsetX, e.offsetY));
    canvas.addEventListener("dblclick", (e) => game.onPointer && game.onPointer("dblclick", e.offsetX, e.offsetY));
    document.addEventListener("keydown", (e) => { if (game.onKey) { game.onKey(e.key); e.preventDefault(); } });
    let last = clock.now;
    function frame(t) {
      const dt = t - last; last = t;
      if (game.update && !game.done) game.update(dt);
      game.draw(AgentRL.ctx);
      requestAnimationFrame(frame);
    }
    game.draw(AgentRL.ctx);
    requestAnimationFrame(frame);
    return { moves: asList(game.moves), width: spec.width, height: spec.height, ...AgentRL.status() };
  };

  // The canvas scaled to w x h, as base64 of packed RGB bytes.
  AgentRL.capture = function (w, h) {
    let target = AgentRL._capture;
    if (!target || target.width !== w || target.height !== h) {
      target = document.createElement("canvas"); target.width = w; target.height = h; AgentRL._capture = target;
    }
    const tctx = target.getContext("2d", { willReadFrequently: true });
    // a game may render elsewhere (Ruffle draws into its own canvas): it names that canvas
    const source = (AgentRL.game && AgentRL.game.captureCanvas) || AgentRL.canvas;
    tctx.imageSmoothingEnabled = w < source.width;
    tctx.drawImage(source, 0, 0, w, h);
    const rgba = tctx.getImageData(0, 0, w, h).data;
    const rgb = new Uint8Array(w * h * 3);
    for (let i = 0, j = 0; i < rgba.length; i += 4, j += 3) { rgb[j] = rgba[i]; rgb[j + 1] = rgba[i + 1]; rgb[j + 2] = rgba[i + 2]; }
    let binary = "";
    const chunk = 0x8000;
    for (let i = 0; i < rgb.length; i += chunk) binary += String.fromCharCode.apply(null, rgb.subarray(i, i + chunk));
    return btoa(binary);
  };

  // One env step: an optional named move, then `frames` frames; returns the status (and a frame, text).
  AgentRL.step = function (request) {
    const game = AgentRL.game;
    let error = null;
    if (request.move !== undefined && request.move !== null) {
      if (game.done) error = "the game is over";
      else {
        const result = game.move(request.move);
        if (result !== true && result !== undefined) error = String(result);
      }
    }
    clock.advance(request.frames || 0, request.frameMs);
    game.draw(AgentRL.ctx);
    const out = AgentRL.status();
    out.error = error;
    if (request.capture) out.frame = AgentRL.capture(request.capture[0], request.capture[1]);
    if (request.text) out.text = game.describe ? String(game.describe()) : "";
    if (request.state) out.state = game.state ? game.state() : null;
    return out;
  };

  AgentRL.inputFor = function (move) { const g = AgentRL.game; return g.moveToInput ? g.moveToInput(move) : null; };
  window.AgentRL = AgentRL;
})();
