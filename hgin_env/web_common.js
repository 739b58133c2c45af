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
function card(c, extra, tag) {
  const e = el(tag || "span", "card" + (isRed(c) ? " red" : ""), D.cards[c]);
  e.dataset.card = c;
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
  D.columns.forEach((c) => head.appendChild(el("th", null, "Column " + c)));
  head.appendChild(el("th", null, "hands won"));
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
