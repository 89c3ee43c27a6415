// Escape room (FlashAdventure-like point-and-click): 1-3 generated rooms (difficulty 1..3), each with
// 6-10 clickable objects. Each room hides one puzzle chain: look at the code holder (a 4-digit code is
// shown once, in the message bar, only right after the look), search a container (first tool), use it
// on a locked object (second tool), use that on a surface (a glowing mark points at a hiding place),
// click the marked object (a hidden safe appears), enter the remembered code on the safe's keypad (a
// keycard), use the keycard on the door (next room; the last door = escaped).
(function () {
  "use strict";
  const W = 512;
  const H = 512;
  const COLS = 5;
  const SLOT_W = 101;
  const SLOT_H = 150;
  const TOP = 32;
  const MSG_Y = 338;
  const INV_Y = 400;
  const INV_X = 96;
  const INV_W = 82;

  const CODE_HOLDERS = ["painting", "clock", "calendar", "mirror", "poster"];
  const CONTAINERS = ["drawer", "desk", "vase", "pillow", "trash can"];
  const LOCKED = ["box", "chest", "crate", "cabinet"];
  const SURFACES = ["rug", "tapestry", "map", "statue"];
  const HIDERS = ["bookshelf", "fireplace", "bed", "sofa", "piano"];
  const DISTRACTORS = ["lamp", "window", "globe", "chair", "radio", "fan", "computer", "plant"];
  const OBJECTS = ["door", "safe"].concat(CODE_HOLDERS, CONTAINERS, LOCKED, SURFACES, HIDERS, DISTRACTORS);
  const FIRST_TOOLS = ["key", "screwdriver", "crowbar"];
  const SECOND_TOOLS = ["uv torch", "magnifier"];
  const ITEMS = FIRST_TOOLS.concat(SECOND_TOOLS, ["keycard"]);
  const ROOM_NAMES = ["Study", "Library", "Attic", "Parlour", "Workshop", "Cellar"];
  const STEP_NAMES = ["found the code", "took the first tool", "got the second tool", "found the hidden safe",
    "opened the safe", "left the room"];
  // which of the six chain steps count as milestones, by number of rooms (6, 10, 12 milestones)
  const STEPS_BY_ROOMS = { 1: [0, 1, 2, 3, 4, 5], 2: [0, 1, 2, 4, 5], 3: [0, 2, 4, 5] };

  const LOOK = {
    door: "A heavy door. The card reader blinks red.", safe: "A steel safe with a keypad.",
    painting: "A dull landscape painting.", clock: "An old clock, ticking.", calendar: "A calendar from years ago.",
    mirror: "Your own tired face.", poster: "A faded concert poster.", drawer: "An empty drawer.",
    desk: "The desk is empty now.", vase: "An empty vase.", pillow: "A flat pillow.", "trash can": "Only dust.",
    box: "The box has a keyhole.", chest: "The chest is locked tight.", crate: "The crate is nailed shut.",
    cabinet: "The cabinet is locked.", rug: "A dusty rug.", tapestry: "A faded tapestry.", map: "An old map.",
    statue: "A marble statue.", bookshelf: "Rows of dusty books.", fireplace: "Cold ashes.", bed: "A creaky bed.",
    sofa: "A lumpy sofa.", piano: "An out-of-tune piano.", lamp: "The lamp flickers.",
    window: "Barred. No way out here.", globe: "You spin the globe.", chair: "A wobbly chair.",
    radio: "Static.", fan: "The fan whirs.", computer: "It asks for a password you don't have.",
    plant: "A thirsty plant.",
  };

  // name -> [archetype, main colour]
  const LOOKS = {
    door: ["door", "#8b5a2b"], safe: ["safe", "#8f9aa6"], painting: ["frame", "#2f8f4e"], clock: ["clock", "#f2e2b0"],
    calendar: ["sheet", "#ffffff"], mirror: ["mirror", "#b8e4ff"], poster: ["sheet", "#ff9ad5"],
    drawer: ["drawer", "#c8864a"], desk: ["desk", "#a0652d"], vase: ["vase", "#3d6fe0"], pillow: ["pillow", "#f4d35e"],
    "trash can": ["bin", "#7a7a7a"], box: ["box", "#d9a441"], chest: ["chest", "#7b3f00"], crate: ["crate", "#c49a6c"],
    cabinet: ["cabinet", "#5b7065"], rug: ["rug", "#c0392b"], tapestry: ["frame", "#8e44ad"], map: ["sheet", "#e8d6a0"],
    statue: ["statue", "#dcdcdc"], bookshelf: ["shelf", "#6b4423"], fireplace: ["fireplace", "#9c4a32"],
    bed: ["bed", "#4a78c2"], sofa: ["sofa", "#b03a48"], piano: ["piano", "#222222"], lamp: ["lamp", "#ffe36e"],
    window: ["window", "#7ec8ff"], globe: ["globe", "#2e86de"], chair: ["chair", "#8d6e63"], radio: ["radio", "#e67e22"],
    fan: ["fan", "#95a5a6"], computer: ["computer", "#34495e"], plant: ["plant", "#27ae60"],
  };
  const ITEM_COLORS = { key: "#f1c40f", screwdriver: "#e74c3c", crowbar: "#c0392b", "uv torch": "#9b59b6",
    magnifier: "#3498db", keycard: "#1abc9c" };

  function pick(rng, list) { return list[Math.floor(rng() * list.length)]; }
  function shuffle(rng, list) {
    const a = list.slice();
    for (let i = a.length - 1; i > 0; i--) { const j = Math.floor(rng() * (i + 1)); const t = a[i]; a[i] = a[j]; a[j] = t; }
    return a;
  }
  function slotRect(i) {
    const c = i % COLS; const r = Math.floor(i / COLS);
    return { x: 4 + c * SLOT_W, y: TOP + 2 + r * (SLOT_H + 2), w: SLOT_W - 4, h: SLOT_H };
  }
  function keypadButton(d) { // d: digit 0-9 or "back"
    let c; let r;
    if (d === "back") { c = 0; r = 3; } else if (d === 0) { c = 1; r = 3; } else { c = (d - 1) % 3; r = Math.floor((d - 1) / 3); }
    return { x: 166 + c * 62, y: 118 + r * 48, w: 56, h: 42 };
  }
  const BACK_BTN = { x: 416, y: 476, w: 90, h: 30 };
  function inside(r, x, y) { return x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h; }
  function center(r) { return { x: Math.round(r.x + r.w / 2), y: Math.round(r.y + r.h / 2) }; }

  function wrap(ctx, text, maxW) {
    const words = String(text).split(" ");
    const lines = [];
    let line = "";
    for (const w of words) {
      const t = line ? line + " " + w : w;
      if (ctx.measureText(t).width > maxW && line) { lines.push(line); line = w; } else line = t;
    }
    if (line) lines.push(line);
    return lines;
  }

  function drawThing(ctx, name, x, y, w, h, open) {
    const [kind, col] = LOOKS[name] || ["box", "#999"];
    const cx = x + w / 2; const cy = y + h / 2;
    ctx.lineWidth = 3; ctx.strokeStyle = "#111"; ctx.fillStyle = col;
    const rect = (rx, ry, rw, rh, fill) => { ctx.fillStyle = fill || col; ctx.fillRect(rx, ry, rw, rh); ctx.strokeRect(rx, ry, rw, rh); };
    const circ = (px, py, r, fill) => { ctx.beginPath(); ctx.arc(px, py, r, 0, Math.PI * 2); ctx.fillStyle = fill || col; ctx.fill(); ctx.stroke(); };
    switch (kind) {
      case "door": rect(cx - 26, y + 4, 52, h - 6); circ(cx + 16, cy + 6, 4, "#ffd700");
        rect(cx - 20, cy - 20, 12, 16, open ? "#2ecc71" : "#e74c3c"); break;
      case "safe": rect(cx - 34, cy - 30, 68, 62); circ(cx, cy + 1, 16, open ? "#2ecc71" : "#555");
        ctx.beginPath(); ctx.moveTo(cx, cy + 1); ctx.lineTo(cx + 12, cy - 6); ctx.stroke(); break;
      case "frame": rect(cx - 38, cy - 32, 76, 60, "#d4a017"); rect(cx - 30, cy - 24, 60, 44);
        ctx.fillStyle = "#fff8"; ctx.beginPath(); ctx.arc(cx + 14, cy - 10, 7, 0, 7); ctx.fill(); break;
      case "clock": circ(cx, cy, 34); ctx.beginPath(); ctx.moveTo(cx, cy); ctx.lineTo(cx, cy - 24);
        ctx.moveTo(cx, cy); ctx.lineTo(cx + 16, cy + 6); ctx.stroke(); break;
      case "sheet": rect(cx - 30, cy - 36, 60, 70);
        for (let i = 0; i < 4; i++) { ctx.beginPath(); ctx.moveTo(cx - 20, cy - 18 + i * 14); ctx.lineTo(cx + 20, cy - 18 + i * 14); ctx.stroke(); } break;
      case "mirror": ctx.beginPath(); ctx.ellipse(cx, cy, 28, 40, 0, 0, 7); ctx.fillStyle = col; ctx.fill(); ctx.lineWidth = 6;
        ctx.strokeStyle = "#c9a227"; ctx.stroke(); break;
      case "drawer": rect(cx - 38, cy - 30, 76, 30); rect(cx - 38, cy, 76, 30); circ(cx, cy - 15, 4, "#333"); circ(cx, cy + 15, 4, "#333"); break;
      case "desk": rect(cx - 44, cy - 12, 88, 14); rect(cx - 40, cy + 2, 10, 36); rect(cx + 30, cy + 2, 10, 36); break;
      case "vase": ctx.beginPath(); ctx.moveTo(cx - 10, cy - 38); ctx.lineTo(cx + 10, cy - 38); ctx.quadraticCurveTo(cx + 44, cy, cx + 14, cy + 38);
        ctx.lineTo(cx - 14, cy + 38); ctx.quadraticCurveTo(cx - 44, cy, cx - 10, cy - 38); ctx.fillStyle = col; ctx.fill(); ctx.stroke(); break;
      case "pillow": ctx.beginPath(); ctx.ellipse(cx, cy, 42, 24, 0, 0, 7); ctx.fillStyle = col; ctx.fill(); ctx.stroke(); break;
      case "bin": ctx.beginPath(); ctx.moveTo(cx - 28, cy - 32); ctx.lineTo(cx + 28, cy - 32); ctx.lineTo(cx + 20, cy + 36); ctx.lineTo(cx - 20, cy + 36);
        ctx.closePath(); ctx.fillStyle = col; ctx.fill(); ctx.stroke(); break;
      case "box": rect(cx - 34, cy - 22, 68, 48); rect(cx - 34, cy - 30, 68, 10, "#b7862d"); circ(cx, cy, 5, "#222"); break;
      case "chest": rect(cx - 40, cy - 20, 80, 46); ctx.beginPath(); ctx.ellipse(cx, cy - 20, 40, 16, 0, Math.PI, 0); ctx.fillStyle = "#5a2e00"; ctx.fill(); ctx.stroke();
        rect(cx - 6, cy - 8, 12, 14, "#ffd700"); break;
      case "crate": rect(cx - 36, cy - 34, 72, 68); ctx.beginPath(); ctx.moveTo(cx - 36, cy - 34); ctx.lineTo(cx + 36, cy + 34);
        ctx.moveTo(cx + 36, cy - 34); ctx.lineTo(cx - 36, cy + 34); ctx.stroke(); break;
      case "cabinet": rect(cx - 32, cy - 44, 64, 88); ctx.beginPath(); ctx.moveTo(cx, cy - 44); ctx.lineTo(cx, cy + 44); ctx.stroke();
        circ(cx - 7, cy, 3, "#ddd"); circ(cx + 7, cy, 3, "#ddd"); break;
      case "rug": ctx.beginPath(); ctx.ellipse(cx, cy + 20, 46, 20, 0, 0, 7); ctx.fillStyle = col; ctx.fill(); ctx.stroke();
        ctx.beginPath(); ctx.ellipse(cx, cy + 20, 30, 11, 0, 0, 7); ctx.strokeStyle = "#f5deb3"; ctx.stroke(); break;
      case "statue": circ(cx, cy - 26, 14); rect(cx - 14, cy - 12, 28, 40); rect(cx - 26, cy + 28, 52, 12, "#999"); break;
      case "shelf": rect(cx - 40, cy - 46, 80, 92);
        for (let r = 0; r < 3; r++) for (let b = 0; b < 6; b++) rect(cx - 34 + b * 11, cy - 40 + r * 30, 9, 24, ["#e74c3c", "#3498db", "#f1c40f", "#2ecc71"][(b + r) % 4]);
        break;
      case "fireplace": rect(cx - 42, cy - 38, 84, 78); rect(cx - 24, cy - 8, 48, 48, "#222");
        ctx.beginPath(); ctx.moveTo(cx - 12, cy + 38); ctx.lineTo(cx, cy + 8); ctx.lineTo(cx + 12, cy + 38); ctx.fillStyle = "#ff8c00"; ctx.fill(); break;
      case "bed": rect(cx - 44, cy, 88, 22); rect(cx - 44, cy - 24, 12, 56, "#5d4037"); rect(cx - 30, cy - 10, 22, 12, "#fff"); break;
      case "sofa": rect(cx - 44, cy - 18, 88, 26); rect(cx - 44, cy + 6, 88, 20); rect(cx - 48, cy - 4, 10, 32); rect(cx + 38, cy - 4, 10, 32); break;
      case "piano": rect(cx - 44, cy - 30, 88, 50); rect(cx - 40, cy + 2, 80, 14, "#fff");
        for (let k = 0; k < 7; k++) rect(cx - 36 + k * 11, cy + 2, 5, 8, "#000"); break;
      case "lamp": ctx.beginPath(); ctx.moveTo(cx - 24, cy - 10); ctx.lineTo(cx - 12, cy - 40); ctx.lineTo(cx + 12, cy - 40); ctx.lineTo(cx + 24, cy - 10); ctx.closePath();
        ctx.fillStyle = col; ctx.fill(); ctx.stroke(); rect(cx - 3, cy - 10, 6, 40, "#333"); rect(cx - 18, cy + 30, 36, 8, "#333"); break;
      case "window": rect(cx - 36, cy - 40, 72, 80); ctx.beginPath(); ctx.moveTo(cx, cy - 40); ctx.lineTo(cx, cy + 40); ctx.moveTo(cx - 36, cy); ctx.lineTo(cx + 36, cy); ctx.stroke(); break;
      case "globe": circ(cx, cy - 8, 30); ctx.beginPath(); ctx.ellipse(cx, cy - 8, 12, 30, 0, 0, 7); ctx.stroke(); rect(cx - 16, cy + 26, 32, 8, "#7f5539"); break;
      case "chair": rect(cx - 22, cy - 40, 8, 78); rect(cx - 22, cy, 44, 10); rect(cx + 14, cy + 10, 8, 28); break;
      case "radio": rect(cx - 40, cy - 22, 80, 48); circ(cx - 16, cy + 2, 13, "#333"); rect(cx + 6, cy - 12, 26, 10, "#fffbe0"); break;
      case "fan": circ(cx, cy - 6, 32, "#dfe6e9");
        for (let b = 0; b < 3; b++) { ctx.beginPath(); ctx.ellipse(cx + Math.cos(b * 2.1) * 14, cy - 6 + Math.sin(b * 2.1) * 14, 14, 6, b * 2.1, 0, 7); ctx.fillStyle = col; ctx.fill(); ctx.stroke(); }
        rect(cx - 4, cy + 26, 8, 14, "#555"); break;
      case "computer": rect(cx - 40, cy - 36, 80, 54); rect(cx - 32, cy - 28, 64, 38, "#7efc8a"); rect(cx - 10, cy + 18, 20, 10); rect(cx - 30, cy + 28, 60, 8, "#bbb"); break;
      case "plant": rect(cx - 18, cy + 10, 36, 30, "#b5651d");
        for (let l = -1; l <= 1; l++) { ctx.beginPath(); ctx.ellipse(cx + l * 16, cy - 10 - (l === 0 ? 12 : 0), 10, 22, l * 0.5, 0, 7); ctx.fillStyle = col; ctx.fill(); ctx.stroke(); }
        break;
      default: rect(cx - 30, cy - 30, 60, 60);
    }
  }

  function drawItem(ctx, item, x, y) {
    ctx.fillStyle = ITEM_COLORS[item] || "#ccc"; ctx.strokeStyle = "#111"; ctx.lineWidth = 2;
    ctx.beginPath();
    if (item === "key") { ctx.arc(x - 12, y, 8, 0, 7); ctx.fill(); ctx.stroke(); ctx.fillRect(x - 4, y - 3, 22, 6); ctx.fillRect(x + 12, y, 4, 8); }
    else if (item === "screwdriver") { ctx.fillRect(x - 20, y - 5, 16, 10); ctx.fillStyle = "#bbb"; ctx.fillRect(x - 4, y - 2, 24, 4); }
    else if (item === "crowbar") { ctx.lineWidth = 5; ctx.strokeStyle = ITEM_COLORS.crowbar; ctx.moveTo(x - 18, y + 10); ctx.lineTo(x + 12, y - 10); ctx.lineTo(x + 18, y - 4); ctx.stroke(); }
    else if (item === "uv torch") { ctx.fillRect(x - 18, y - 5, 26, 10); ctx.moveTo(x + 8, y - 5); ctx.lineTo(x + 20, y - 11); ctx.lineTo(x + 20, y + 11); ctx.lineTo(x + 8, y + 5); ctx.fill(); }
    else if (item === "magnifier") { ctx.lineWidth = 4; ctx.strokeStyle = ITEM_COLORS.magnifier; ctx.arc(x - 4, y - 4, 10, 0, 7); ctx.stroke(); ctx.beginPath(); ctx.moveTo(x + 4, y + 4); ctx.lineTo(x + 16, y + 14); ctx.stroke(); }
    else { ctx.fillRect(x - 16, y - 10, 32, 20); ctx.strokeRect(x - 16, y - 10, 32, 20); ctx.fillStyle = "#111"; ctx.fillRect(x - 16, y - 5, 32, 4); }
  }

  function makeRoom(rng, index, rooms, difficulty) {
    const roles = {
      code: pick(rng, CODE_HOLDERS), container: pick(rng, CONTAINERS), locked: pick(rng, LOCKED),
      surface: pick(rng, SURFACES), hider: pick(rng, HIDERS),
    };
    const first = pick(rng, FIRST_TOOLS);
    const second = pick(rng, SECOND_TOOLS);
    const nDistract = Math.floor(rng() * 4); // 0..3: 6-9 visible objects, 7-10 with the safe
    const distractors = shuffle(rng, DISTRACTORS).slice(0, nDistract);
    const visible = ["door", roles.code, roles.container, roles.locked, roles.surface, roles.hider].concat(distractors);
    const order = shuffle(rng, visible.concat(["safe"]));
    let code = "";
    for (let i = 0; i < 4; i++) code += String(Math.floor(rng() * 10));
    let decoy = null;
    if (difficulty >= 2 && distractors.length) {
      let d = code;
      while (d === code) { d = ""; for (let i = 0; i < 4; i++) d += String(Math.floor(rng() * 10)); }
      decoy = { object: distractors[0], number: d };
    }
    return {
      index, name: ROOM_NAMES[Math.floor(rng() * ROOM_NAMES.length)], slots: order, roles, first, second, code, decoy,
      last: index === rooms - 1,
      flags: { codeSeen: false, tookFirst: false, gotSecond: false, clue: false, safeShown: false, safeOpen: false, doorOpen: false },
    };
  }

  function create(_ctx, options) {
    const difficulty = Math.max(1, Math.min(3, Math.round(Number((options || {}).difficulty) || 2)));
    const rooms = difficulty;
    const milestones = [];
    for (let r = 0; r < rooms; r++) {
      for (const s of STEPS_BY_ROOMS[rooms]) {
        if (s === 5 && r === rooms - 1) milestones.push("escaped");
        else milestones.push(rooms > 1 ? "room " + (r + 1) + ": " + STEP_NAMES[s] : STEP_NAMES[s]);
      }
    }
    const moves = OBJECTS.map((o) => "click " + o).concat(ITEMS.map((i) => "select " + i));
    for (let d = 0; d <= 9; d++) moves.push("enter " + d);
    moves.push("back");

    const game = {
      moves, milestones, reached: [], score: 0, done: false, won: false,
      reset(rng) {
        this.rooms = [];
        for (let r = 0; r < rooms; r++) this.rooms.push(makeRoom(rng, r, rooms, difficulty));
        this.room = 0; this.inventory = []; this.selected = null; this.keypad = null;
        this.message = "You wake up locked in. Look around: click things, use items from your inventory.";
        this.reached = []; this.score = 0; this.done = false; this.won = false; this.turns = 0;
      },
      cur() { return this.rooms[this.room]; },
      present(o) {
        const rm = this.cur();
        if (!rm.slots.includes(o)) return false;
        return o !== "safe" || rm.flags.safeShown;
      },
      mark(step) {
        const rm = this.cur();
        let name;
        if (step === 5 && rm.last) name = "escaped";
        else name = rooms > 1 ? "room " + (rm.index + 1) + ": " + STEP_NAMES[step] : STEP_NAMES[step];
        if (this.milestones.includes(name) && !this.reached.includes(name)) { this.reached.push(name); this.score = this.reached.length; }
      },
      addItem(item) { if (!this.inventory.includes(item)) this.inventory.push(item); },
      useItem(item) { this.inventory = this.inventory.filter((i) => i !== item); this.selected = null; },
      move(name) {
        if (this.done) return "the game is over";
        const n = String(name).trim();
        const turn = () => { this.turns += 1; return true; };
        if (n === "back") {
          if (this.keypad) { this.keypad = null; this.message = "You step back from the safe."; }
          else if (this.selected) { this.message = "You put the " + this.selected + " back."; this.selected = null; }
          else this.message = "Nothing to go back from.";
          return turn();
        }
        let m = /^enter (\d)$/.exec(n);
        if (m) {
          if (!this.keypad) return "the keypad is not open";
          this.keypad.entered += m[1];
          const rm = this.cur();
          if (this.keypad.entered.length >= 4) {
            if (this.keypad.entered === rm.code) {
              rm.flags.safeOpen = true; this.keypad = null; this.addItem("keycard");
              this.message = "Click! The safe swings open. Inside: a keycard. You take it.";
              this.mark(4);
            } else {
              this.keypad.entered = "";
              this.message = "BZZT. Wrong code. The display clears.";
            }
          } else this.message = "Keypad: " + this.keypad.entered;
          return turn();
        }
        m = /^select (.+)$/.exec(n);
        if (m) {
          const item = m[1];
          if (!ITEMS.includes(item)) return "unknown item " + item;
          if (!this.inventory.includes(item)) return "no " + item + " in the inventory";
          if (this.keypad) return "the keypad is open: enter digits or go back";
          if (this.selected === item) { this.selected = null; this.message = "You put the " + item + " back."; }
          else { this.selected = item; this.message = "Selected the " + item + ". Click something to use it on."; }
          return turn();
        }
        m = /^click (.+)$/.exec(n);
        if (!m) return "unknown move " + n;
        const obj = m[1];
        if (!OBJECTS.includes(obj)) return "unknown object " + obj;
        if (!this.present(obj)) return "there is no " + obj + " here";
        if (this.keypad) return "the keypad is open: enter digits or go back";
        this.clickObject(obj);
        return turn();
      },
      clickObject(obj) {
        const rm = this.cur(); const f = rm.flags; const R = rm.roles; const sel = this.selected;
        if (sel) {
          this.selected = null;
          if (sel === rm.first && obj === R.locked && !f.gotSecond) {
            this.useItem(sel); this.addItem(rm.second); f.gotSecond = true;
            this.message = "You open the " + obj + " with the " + sel + ". Inside: a " + rm.second + ". You take it.";
            this.mark(2); return;
          }
          if (sel === rm.second && obj === R.surface && !f.clue) {
            this.useItem(sel); f.clue = true;
            this.message = (sel === "uv torch" ? "Under the UV light the " : "Through the magnifier the ") + obj +
              " shows a tiny arrow pointing at the " + R.hider + ".";
            return;
          }
          if (sel === "keycard" && obj === "door") {
            this.useItem(sel); f.doorOpen = true; this.mark(5);
            if (rm.last) { this.won = true; this.done = true; this.message = "The card reader beeps green. The door opens: you ESCAPED!"; }
            else { this.room += 1; this.message = "The door opens. You enter the next room: the " + this.cur().name + ". It locks behind you."; }
            return;
          }
          this.message = "Using the " + sel + " on the " + obj + " does nothing.";
          return;
        }
        if (obj === R.code) {
          f.codeSeen = true; this.mark(0);
          this.message = "Behind the " + obj + " someone scratched: SAFE CODE " + rm.code.split("").join(" ") + ". Remember it!";
          return;
        }
        if (obj === R.container && !f.tookFirst) {
          f.tookFirst = true; this.addItem(rm.first); this.mark(1);
          this.message = "You search the " + obj + " and find a " + rm.first + ". You take it.";
          return;
        }
        if (obj === R.locked && !f.gotSecond) {
          const how = { key: "It has a keyhole.", screwdriver: "Its lid is held by screws.", crowbar: "It is nailed shut; pry it?" };
          this.message = "The " + obj + " is locked. " + how[rm.first]; return;
        }
        if (obj === R.locked) { this.message = "The " + obj + " is open and empty."; return; }
        if (obj === R.surface && !f.clue) {
          this.message = rm.second === "uv torch" ? "The " + obj + " looks ordinary in this light." : "The " + obj + " has tiny marks too small to read.";
          return;
        }
        if (obj === R.hider && f.clue && !f.safeShown) {
          f.safeShown = true; this.mark(3);
          this.message = "You search the marked " + obj + ": a hidden safe is revealed!"; return;
        }
        if (obj === "safe") {
          if (f.safeOpen) { this.message = "The safe is open and empty."; return; }
          this.keypad = { entered: "" }; this.message = "The safe keypad lights up. Enter the 4-digit code."; return;
        }
        if (obj === "door") { this.message = f.doorOpen ? "The door is open." : LOOK.door; return; }
        if (rm.decoy && obj === rm.decoy.object) {
          this.message = (obj === "radio" ? "The radio repeats: " : "Scratched on the " + obj + ": ") + rm.decoy.number.split("").join(" ") + " ... it means nothing.";
          return;
        }
        this.message = LOOK[obj] || "Nothing special.";
      },
      onPointer(type, x, y) {
        if (type !== "click" || this.done) return;
        if (this.keypad) {
          for (let d = 0; d <= 9; d++) if (inside(keypadButton(d), x, y)) { this.move("enter " + d); return; }
          if (inside(keypadButton("back"), x, y)) this.move("back");
          return;
        }
        if (inside(BACK_BTN, x, y)) { this.move("back"); return; }
        const rm = this.cur();
        for (let i = 0; i < rm.slots.length; i++) {
          if (inside(slotRect(i), x, y) && this.present(rm.slots[i])) { this.move("click " + rm.slots[i]); return; }
        }
        for (let i = 0; i < this.inventory.length; i++) {
          if (inside({ x: INV_X + i * INV_W, y: INV_Y + 4, w: INV_W - 6, h: 62 }, x, y)) { this.move("select " + this.inventory[i]); return; }
        }
      },
      onKey(key) {
        if (this.keypad && /^[0-9]$/.test(key)) this.move("enter " + key);
        else if (key === "Escape" || key === "Backspace") this.move("back");
      },
      moveToInput(name) {
        const n = String(name).trim();
        if (n === "back") return this.keypad ? { type: "click", ...center(keypadButton("back")) } : { type: "click", ...center(BACK_BTN) };
        let m = /^enter (\d)$/.exec(n);
        if (m) return this.keypad ? { type: "click", ...center(keypadButton(Number(m[1]))) } : null;
        m = /^select (.+)$/.exec(n);
        if (m) {
          const i = this.inventory.indexOf(m[1]);
          return i < 0 || this.keypad ? null : { type: "click", x: INV_X + i * INV_W + 38, y: INV_Y + 35 };
        }
        m = /^click (.+)$/.exec(n);
        if (m && this.present(m[1]) && !this.keypad) {
          const i = this.cur().slots.indexOf(m[1]);
          return { type: "click", ...center(slotRect(i)) };
        }
        return null;
      },
      draw(ctx) {
        ctx.clearRect(0, 0, W, H);
        ctx.fillStyle = "#2b2118"; ctx.fillRect(0, 0, W, H);
        const rm = this.cur();
        ctx.fillStyle = "#111"; ctx.fillRect(0, 0, W, TOP);
        ctx.fillStyle = "#fff"; ctx.font = "bold 16px sans-serif"; ctx.textBaseline = "middle"; ctx.textAlign = "left";
        ctx.fillText("Room " + (rm.index + 1) + "/" + rooms + ": " + rm.name, 8, TOP / 2);
        ctx.textAlign = "right";
        ctx.fillText("Milestones " + this.reached.length + "/" + this.milestones.length, W - 8, TOP / 2);
        // the room: wall and floor
        ctx.fillStyle = "#e9dcc3"; ctx.fillRect(0, TOP, W, 200); ctx.fillStyle = "#b08a5a"; ctx.fillRect(0, TOP + 200, W, MSG_Y - TOP - 200);
        for (let i = 0; i < rm.slots.length; i++) {
          const o = rm.slots[i]; if (!this.present(o)) continue;
          const r = slotRect(i);
          ctx.fillStyle = "rgba(255,255,255,0.25)"; ctx.fillRect(r.x, r.y, r.w, r.h);
          ctx.strokeStyle = "#00000040"; ctx.lineWidth = 1; ctx.strokeRect(r.x, r.y, r.w, r.h);
          const open = (o === "door" && rm.flags.doorOpen) || (o === "safe" && rm.flags.safeOpen);
          drawThing(ctx, o, r.x, r.y + 2, r.w, r.h - 28, open);
          ctx.fillStyle = "#000"; ctx.fillRect(r.x + 4, r.y + r.h - 24, r.w - 8, 21);
          ctx.fillStyle = "#fff"; ctx.font = "bold 14px sans-serif"; ctx.textAlign = "center";
          ctx.fillText(o.toUpperCase(), r.x + r.w / 2, r.y + r.h - 13);
        }
        // message bar
        ctx.fillStyle = "#0b1a33"; ctx.fillRect(0, MSG_Y, W, INV_Y - MSG_Y - 4);
        ctx.fillStyle = "#ffffff"; ctx.font = "bold 15px sans-serif"; ctx.textAlign = "left";
        const lines = wrap(ctx, this.message, W - 16).slice(0, 3);
        lines.forEach((l, i) => ctx.fillText(l, 8, MSG_Y + 11 + i * 19));
        // inventory
        ctx.fillStyle = "#3b3b3b"; ctx.fillRect(0, INV_Y, W, 72);
        ctx.fillStyle = "#fff"; ctx.font = "bold 14px sans-serif"; ctx.fillText("ITEMS:", 8, INV_Y + 36);
        this.inventory.forEach((item, i) => {
          const x = INV_X + i * INV_W;
          ctx.fillStyle = this.selected === item ? "#fff3a0" : "#dddddd"; ctx.fillRect(x, INV_Y + 4, INV_W - 6, 62);
          ctx.lineWidth = this.selected === item ? 4 : 1; ctx.strokeStyle = this.selected === item ? "#ff9800" : "#000";
          ctx.strokeRect(x, INV_Y + 4, INV_W - 6, 62);
          drawItem(ctx, item, x + 38, INV_Y + 26);
          ctx.fillStyle = "#000"; ctx.font = "bold 12px sans-serif"; ctx.textAlign = "center"; ctx.fillText(item, x + 38, INV_Y + 55); ctx.textAlign = "left";
        });
        // status and back button
        ctx.fillStyle = "#111"; ctx.fillRect(0, INV_Y + 72, W, H - INV_Y - 72);
        ctx.fillStyle = "#fff"; ctx.font = "bold 14px sans-serif";
        ctx.fillText(this.won ? "ESCAPED!" : "Using: " + (this.selected || "-"), 8, BACK_BTN.y + 15);
        ctx.fillStyle = "#c0392b"; ctx.fillRect(BACK_BTN.x, BACK_BTN.y, BACK_BTN.w, BACK_BTN.h);
        ctx.fillStyle = "#fff"; ctx.textAlign = "center"; ctx.fillText("BACK", BACK_BTN.x + BACK_BTN.w / 2, BACK_BTN.y + 15);
        if (this.keypad) {
          ctx.fillStyle = "rgba(0,0,0,0.55)"; ctx.fillRect(0, TOP, W, MSG_Y - TOP);
          ctx.fillStyle = "#444c55"; ctx.fillRect(152, 54, 208, 278); ctx.strokeStyle = "#fff"; ctx.lineWidth = 3; ctx.strokeRect(152, 54, 208, 278);
          ctx.fillStyle = "#0a2a0a"; ctx.fillRect(166, 64, 180, 44);
          ctx.fillStyle = "#39ff14"; ctx.font = "bold 28px monospace";
          let shown = ""; for (let i = 0; i < 4; i++) shown += (this.keypad.entered[i] || "_") + (i < 3 ? " " : "");
          ctx.fillText(shown, 256, 87);
          for (let d = 0; d <= 9; d++) {
            const b = keypadButton(d); ctx.fillStyle = "#eee"; ctx.fillRect(b.x, b.y, b.w, b.h);
            ctx.fillStyle = "#000"; ctx.font = "bold 22px sans-serif"; ctx.fillText(String(d), b.x + b.w / 2, b.y + b.h / 2 + 1);
          }
          const b = keypadButton("back"); ctx.fillStyle = "#c0392b"; ctx.fillRect(b.x, b.y, b.w, b.h);
          ctx.fillStyle = "#fff"; ctx.font = "bold 14px sans-serif"; ctx.fillText("BACK", b.x + b.w / 2, b.y + b.h / 2 + 1);
        }
        ctx.textAlign = "left";
      },
      state() {
        return {
          difficulty, room: this.room, rooms: JSON.parse(JSON.stringify(this.rooms)), inventory: this.inventory.slice(),
          selected: this.selected, keypad: this.keypad ? { entered: this.keypad.entered } : null, message: this.message,
          reached: this.reached.slice(), won: this.won, done: this.done, turns: this.turns,
        };
      },
      describe() {
        const rm = this.cur();
        const objs = rm.slots.filter((o) => this.present(o));
        let t = "Room " + (rm.index + 1) + " of " + rooms + " (" + rm.name + "). Objects: " + objs.join(", ") + ". ";
        t += "Inventory: " + (this.inventory.length ? this.inventory.map((i) => i + (i === this.selected ? " (selected)" : "")).join(", ") : "empty") + ". ";
        if (this.keypad) t += "The safe keypad is open; entered so far: '" + this.keypad.entered + "'. ";
        t += "Message: " + this.message;
        return t;
      },
    };
    return game;
  }

  AgentRL.register("escape", { width: W, height: H, create });
})();
