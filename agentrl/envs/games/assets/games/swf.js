// AgentRL game "swf": a Flash movie (.swf) played by Ruffle (canvas renderer), scored by pixel milestones.
//
// The page must load Ruffle first: <script src="/ruffle/ruffle.js"></script> then this file.
// options: swf_url (e.g. "/swf/clicker.swf"), size [W, H] (the movie's stage), milestones
// [{name, region: [x, y, w, h], color: [r, g, b], tolerance}], win (a milestone name), actions
// {"<move name>": [x, y]} (named clicks = the discrete moves), solution [move names] (for the oracle).
// A milestone is reached (for good) when the mean colour of its region in Ruffle's rendered frame
// is within `tolerance` (per channel) of `color`.
//
// Ruffle runs under the runtime's virtual clock: its frame loop (requestAnimationFrame, timers,
// performance.now) advances only when the env steps. Loading (fetch, wasm compile, promises) runs in
// real time: `ready` stays false until the movie is loaded and its frame has held still for QUIET_MS of real
// time (the desktop's settle, for a page), so the env steps frames until ready. Moves dispatch synthetic pointer events on Ruffle's canvas at the named point.
(function () {
  "use strict";
  const DEFAULT_SIZE = [240, 180];
  // how long (real time) the loaded movie's frame must hold still before the first observation
  const QUIET_MS = 150;

  function clamp255(x) { return Math.max(0, Math.min(255, Math.round(x))); }

  AgentRL.register("swf", {
    width: DEFAULT_SIZE[0],
    height: DEFAULT_SIZE[1],
    create(ctx, options) {
      const spec = this;
      const size = Array.isArray(options.size) && options.size.length === 2 ? options.size.map(Number) : DEFAULT_SIZE;
      spec.width = size[0]; spec.height = size[1];
      const W = size[0], H = size[1];
      const milestoneSpecs = Array.isArray(options.milestones) ? options.milestones : [];
      const actions = options.actions && typeof options.actions === "object" ? options.actions : {};
      const solution = Array.isArray(options.solution) ? options.solution.map(String) : [];
      const winName = options.win || (milestoneSpecs.length ? milestoneSpecs[milestoneSpecs.length - 1].name : null);
      const probe = document.createElement("canvas");
      probe.width = W; probe.height = H;
      const probeCtx = probe.getContext("2d", { willReadFrequently: true });
      if (AgentRL.canvas) AgentRL.canvas.style.display = "none";

      const game = {
        moves: Object.keys(actions),
        milestones: milestoneSpecs.map((m) => String(m.name)),
        reached: [],
        score: 0,
        done: false,
        won: false,
        ready: false,
        error: null,
        player: null,
        history: [],
        solutionIndex: 0,
        clicks: 0,

        // the canvas AgentRL.capture reads: Ruffle's (in the player's shadow DOM) once it exists
        get captureCanvas() { return this.rufflecanvas() || AgentRL.canvas; },
        rufflecanvas() {
          const p = this.player;
          return p && p.shadowRoot ? p.shadowRoot.querySelector("canvas") : null;
        },

        reset(rng) {
          // the movie is deterministic: rng is not used; a fresh player per start
          this.reached = []; this.score = 0; this.done = false; this.won = false; this.ready = false;
          this.history = []; this.solutionIndex = 0; this.clicks = 0; this.error = null;
          this.loadedFrames = 0; this.lastSignature = null; this.lastCheckAt = null;
          this.stillSince = 0; this.stillChecks = 0;
          if (this.player) this.player.remove();
          if (!window.RufflePlayer || !window.RufflePlayer.newest) {
            this.error = "Ruffle is not loaded (the page needs <script src=\"/ruffle/ruffle.js\">)";
            return;
          }
          const player = window.RufflePlayer.newest().createPlayer();
          player.id = "ruffle";
          Object.assign(player.style, { position: "absolute", left: "0px", top: "0px", width: W + "px",
            height: H + "px", margin: "0", padding: "0", border: "0", display: "block" });
          document.body.appendChild(player);
          this.player = player;
          // real mouse clicks on the player count as the named move at that point (for the oracle)
          player.addEventListener("pointerup", (e) => { if (e.isTrusted) this.noteClick(e.offsetX, e.offsetY); }, true);
          const config = {
            url: options.swf_url || "/swf/clicker.swf",
            preferredRenderer: "canvas", autoplay: "on", unmuteOverlay: "hidden", splashScreen: false,
            letterbox: "off", contextMenu: "off", showSwfDownload: false, warnOnUnsupportedContent: false,
            openUrlMode: "deny", allowFullscreen: false, logLevel: "error", polyfills: false,
            preloader: false, quality: options.quality || "high", scale: "exactfit", forceScale: true,
          };
          const self = this;
          player.load(config).catch((err) => { self.error = "Ruffle could not load the movie: " + err; });
        },

        // the named move whose point is nearest (within 24 px) to a click
        noteClick(x, y) {
          let best = null, bestD = 24 * 24;
          for (const name of this.moves) {
            const [ax, ay] = actions[name];
            const d = (ax - x) * (ax - x) + (ay - y) * (ay - y);
            if (d <= bestD) { best = name; bestD = d; }
          }
          this.clicks += 1;
          if (best !== null) this.record(best);
        },

        record(name) {
          this.history.push(name);
          if (this.solutionIndex < solution.length && solution[this.solutionIndex] === name) this.solutionIndex += 1;
        },

        // loaded and drawn: Ruffle's canvas holds an opaque frame (the movie's background at least)
        loaded() {
          const p = this.player, canvas = this.rufflecanvas();
          if (!p || p.readyState !== 2 || !canvas || canvas.width === 0) return false;
          probeCtx.clearRect(0, 0, 1, 1);
          probeCtx.drawImage(canvas, canvas.width / 2, canvas.height / 2, 1, 1, 0, 0, 1, 1);
          return probeCtx.getImageData(0, 0, 1, 1).data[3] === 255;
        },

        // synthetic pointer/mouse events at movie pixel (x, y) on Ruffle's canvas
        dispatchClick(x, y) {
          const canvas = this.rufflecanvas();
          const rect = canvas.getBoundingClientRect();
          const cx = rect.left + x * rect.width / W, cy = rect.top + y * rect.height / H;
          const base = { bubbles: true, cancelable: true, composed: true, clientX: cx, clientY: cy, screenX: cx,
            screenY: cy, view: window, pointerId: 1, pointerType: "mouse", isPrimary: true, width: 1, height: 1 };
          canvas.dispatchEvent(new PointerEvent("pointermove", { ...base, button: -1, buttons: 0 }));
          canvas.dispatchEvent(new MouseEvent("mousemove", { ...base, button: 0, buttons: 0 }));
          canvas.dispatchEvent(new PointerEvent("pointerdown", { ...base, button: 0, buttons: 1, pressure: 0.5 }));
          canvas.dispatchEvent(new MouseEvent("mousedown", { ...base, button: 0, buttons: 1 }));
          canvas.dispatchEvent(new PointerEvent("pointerup", { ...base, button: 0, buttons: 0 }));
          canvas.dispatchEvent(new MouseEvent("mouseup", { ...base, button: 0, buttons: 0 }));
          canvas.dispatchEvent(new MouseEvent("click", { ...base, button: 0, buttons: 0, detail: 1 }));
        },

        move(name) {
          if (!Object.prototype.hasOwnProperty.call(actions, name)) return "unknown move " + JSON.stringify(name) + "; moves: " + this.moves.join(", ");
          if (!this.ready) return "the movie is still loading";
          const [x, y] = actions[name];
          try { this.dispatchClick(Number(x), Number(y)); } catch (e) { return "the click did not reach Ruffle (" + e + "); use the mouse action mode"; }
          this.clicks += 1;
          this.record(name);
          return true;
        },

        moveToInput(name) {
          if (!Object.prototype.hasOwnProperty.call(actions, name)) return null;
          return { type: "click", x: Number(actions[name][0]), y: Number(actions[name][1]) };
        },

        onPointer() { /* the runtime canvas is hidden: clicks go to Ruffle's own canvas */ },

        // mean colour of a region of the rendered movie
        regionColor(region) {
          const canvas = this.rufflecanvas();
          const [x, y, w, h] = region.map(Number);
          const sx = canvas.width / W, sy = canvas.height / H;
          probeCtx.clearRect(0, 0, W, H);
          probeCtx.drawImage(canvas, x * sx, y * sy, Math.max(1, w * sx), Math.max(1, h * sy), 0, 0, w, h);
          const data = probeCtx.getImageData(0, 0, Math.max(1, w), Math.max(1, h)).data;
          let r = 0, g = 0, b = 0;
          const n = data.length / 4;
          for (let i = 0; i < data.length; i += 4) { r += data[i]; g += data[i + 1]; b += data[i + 2]; }
          return [clamp255(r / n), clamp255(g / n), clamp255(b / n)];
        },

        // a small picture of the whole rendered frame, to tell whether two frames are the same
        signature() {
          const canvas = this.rufflecanvas();
          probeCtx.clearRect(0, 0, 24, 18);
          probeCtx.drawImage(canvas, 0, 0, canvas.width, canvas.height, 0, 0, 24, 18);
          return Array.from(probeCtx.getImageData(0, 0, 24, 18).data).join(",");
        },

        check() {
          if (!this.ready) {
            if (!this.loaded()) return;
            // ready once the frame has held still for QUIET_MS of real time over at least 3 checks (or after 60
            // loaded frames, for a movie that moves): what Ruffle decodes in real time (images, fonts) lands before
            // the first observation, under load too. Two equal frames in a row were not enough: a decode that
            // landed after them made the first observation differ between runs with one seed.
            // (frames, not calls: update and draw both check within one frame, so it compares frames by the clock)
            const now = performance.now();
            if (now === this.lastCheckAt) return;
            this.lastCheckAt = now;
            const sig = this.signature();
            this.loadedFrames += 1;
            const wall = AgentRL.wallNow();
            if (sig !== this.lastSignature) { this.stillSince = wall; this.stillChecks = 0; }
            this.stillChecks += 1;
            const settled = (this.stillChecks >= 3 && wall - this.stillSince >= QUIET_MS) || this.loadedFrames >= 60;
            this.lastSignature = sig;
            if (!settled) return;
            this.ready = true;
          }
          for (const m of milestoneSpecs) {
            if (this.reached.includes(m.name)) continue;
            const c = this.regionColor(m.region);
            const tol = m.tolerance === undefined ? 40 : Number(m.tolerance);
            const target = m.color.map(Number);
            if (Math.max(Math.abs(c[0] - target[0]), Math.abs(c[1] - target[1]), Math.abs(c[2] - target[2])) <= tol) {
              this.reached.push(m.name);
            }
          }
          this.score = this.reached.length;
          if (winName !== null && this.reached.includes(winName)) { this.won = true; this.done = true; }
        },

        update() { this.check(); },
        draw() { this.check(); },

        state() {
          return { solution: solution.slice(), solution_index: this.solutionIndex, history: this.history.slice(),
            reached: this.reached.slice(), ready: this.ready, error: this.error, clicks: this.clicks,
            actions: JSON.parse(JSON.stringify(actions)), size: [W, H], swf_url: options.swf_url || null };
        },

        describe() {
          if (this.error) return "Error: " + this.error;
          if (!this.ready) return "A Flash movie is loading.";
          const left = this.milestones.filter((m) => !this.reached.includes(m));
          return "A Flash movie (" + W + "x" + H + " pixels) is playing. Clicks available: " +
            (this.moves.length ? this.moves.join(", ") : "(none; use the mouse)") + ". Milestones reached: " +
            (this.reached.length ? this.reached.join(", ") : "none") + (left.length ? "; still to reach: " + left.join(", ") : "") + "." +
            (this.won ? " You won." : "");
        },
      };
      return game;
    },
  });
})();
