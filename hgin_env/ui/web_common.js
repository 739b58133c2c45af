// Shared by the match viewer and the play page (hgin_env/webpage.py inlines it).
// The page defines D: names (by seat), columns (sheet column names), cards (card id -> text).
function $(id) { return document.getElementById(id); }
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function isRed(c) { return Math.floor(c / 13) === 1 || Math.floor(c / 13) === 2; }  // diamonds, hearts
// The suits as shapes (viewBox 0 0 32 32), so a card reads without its colour: the design of
// hgin_env/image.py (rank and a small suit in the corner, a large suit at the bottom right).
const SUIT_NAMES = ["clubs", "diamonds", "hearts", "spades"];
const SUIT_PATHS = [
  "M16 2a6.5 6.5 0 1 1 0 13a6.5 6.5 0 1 1 0-13zM8.5 12a6.5 6.5 0 1 1 0 13a6.5 6.5 0 1 1 0-13z" +
    "M23.5 12a6.5 6.5 0 1 1 0 13a6.5 6.5 0 1 1 0-13zM14.5 14h3l2 16h-7z",
  "M16 1L28 16L16 31L4 16z",
  "M16 29C6 21 1.5 15.5 1.5 10A7.5 7.5 0 0 1 16 7.5A7.5 7.5 0 0 1 30.5 10C30.5 15.5 26 21 16 29z",
  "M16 1C10 9 2 13 2 19.5A6.5 6.5 0 0 0 14.5 22L12.5 31h7l-2-9A6.5 6.5 0 0 0 30 19.5C30 13 22 9 16 1z",
];
function suitShape(suit, cls) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 32 32");
  svg.setAttribute("class", "suit " + cls);
  svg.setAttribute("aria-hidden", "true");
  svg.dataset.suit = SUIT_NAMES[suit];
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", SUIT_PATHS[suit]);
  svg.appendChild(path);
  return svg;
}
function card(c, extra, tag) {  // a card face: a span, or a button when tag is "button"
  const e = el(tag || "span", "card face" + (isRed(c) ? " red" : ""));
  const suit = Math.floor(c / 13), text = D.cards[c];
  e.dataset.card = c;
  e.setAttribute("aria-label", text);
  if (!tag || tag === "span") e.setAttribute("role", "img");
  e.appendChild(el("span", "rank", text.slice(0, -1)));
  e.appendChild(suitShape(suit, "pip"));
  e.appendChild(suitShape(suit, "big"));
  if (extra) e.classList.add(extra);
  return e;
}
function redSuits(text, node) {  // colour the red suit symbols of a line of words
  node.textContent = "";
  for (const part of text.split(/([0-9AJQK]+[\u2666\u2665])/)) {
    node.appendChild(part.match(/[\u2666\u2665]$/) ? el("span", "red-text", part) : document.createTextNode(part));
  }
}

function showSheet(sheet, before) {
  const box = $("sheet");
  box.textContent = "";
  if (!sheet) { box.appendChild(el("div", "muted", "No hand scored yet.")); return; }
  const t = el("table", "sheet");
  const head = el("tr");
  head.appendChild(el("th", null, ""));
  const th = (long, short) => {  // the long words go on a narrow (phone) window
    const e = el("th");
    e.appendChild(el("span", "long", long));
    e.appendChild(document.createTextNode(short));
    return e;
  };
  D.columns.forEach((c) => head.appendChild(th("Column ", c)));
  head.appendChild(th("hands ", "won"));
  head.appendChild(el("th", null, "total"));
  t.appendChild(head);
  for (let p = 0; p < 2; p++) {
    const tr = el("tr");
    tr.appendChild(el("th", null, D.names[p]));
    D.columns.forEach((_, c) => {
      const td = el("td", null, String(sheet.scores[p][c]));
      if (before && before.scores[p][c] !== sheet.scores[p][c]) td.classList.add("changed");
      if (sheet.decided[c] && sheet.column_winner[c] === p) td.classList.add("won");
      tr.appendChild(td);
    });
    tr.appendChild(el("td", null, String(sheet.wins[p])));
    tr.appendChild(el("td", null, String(sheet.totals[p])));
    t.appendChild(tr);
  }
  box.appendChild(t);
  const decided = D.columns.map((c, i) => sheet.decided[i] ? "Column " + c + " to " + D.names[sheet.column_winner[i]] : null).filter(Boolean);
  if (decided.length) box.appendChild(el("div", "line", "Decided: " + decided.join("; ")));
  if (sheet.match_winner >= 0) {
    const won = [0, 1].map((p) => sheet.decided.filter((d, i) => d && sheet.column_winner[i] === p).length);
    box.appendChild(el("div", "line", "Match won by " + D.names[sheet.match_winner] +
      " (" + won.join("\u2013") + " columns, totals " + sheet.totals.join("\u2013") + ")"));
  }
}

function showShowdown(sd) {
  const box = $("showdown");
  box.textContent = "";
  if (!sd) { box.appendChild(el("div", "muted", "Shown when the hand ends.")); return; }
  if (sd.dead) { box.appendChild(el("div", "line", "Dead hand: the stock ran down to two cards. No score.")); return; }
  const how = sd.big_gin ? "big gin" : sd.gin ? "gin" : sd.undercut ? "undercut" : "knock";
  const wins = D.names[sd.winner] === "You" ? " win" : " wins";  // the play page calls you "You"
  box.appendChild(el("div", "line", D.names[sd.winner] + wins + " the hand by " + how + " (" +
      D.names[sd.knocker] + (sd.big_gin ? " went big gin" : " knocked") + "), scoring " + sd.award + "."));
  const layoffs = new Set(sd.layoffs);
  for (let p = 0; p < 2; p++) {
    const line = el("div", "line");
    line.appendChild(el("strong", null, D.names[p] + ": "));
    const inMeld = new Set();
    for (const meld of sd.melds[p]) {
      const m = el("span", "meld");
      meld.forEach((c) => { inMeld.add(c); m.appendChild(card(c, layoffs.has(c) ? "layoff" : null)); });
      line.appendChild(m);
    }
    const dead = sd.hands[p].filter((c) => !inMeld.has(c) && !layoffs.has(c));
    if (p !== sd.knocker && sd.layoffs.length) {
      const lay = el("span", "meld");
      sd.layoffs.forEach((c) => lay.appendChild(card(c, "layoff")));
      line.appendChild(document.createTextNode(" laid off: "));
      line.appendChild(lay);
    }
    line.appendChild(document.createTextNode(" deadwood " + sd.deadwood[p] + (dead.length ? ": " : "")));
    dead.forEach((c) => line.appendChild(card(c)));
    box.appendChild(line);
  }
}
