// The affidavit page: plain DOM, no dependencies. Every piece of text that comes from the server
// (answers, chunks, reasons) is put in the page with textContent, never parsed as HTML, and
// through shown(), so that what a reader sees is the text that was checked.
"use strict";

const state = { response: null, certificate: null, tokens: "" };

// C0 controls (but tab and line breaks), DEL, C1 controls and the bidi controls, which reorder
// what follows them ("opened in U+202E 0981" reads "opened in 1890"): shown escaped, as the
// terminal shows them (affidavit.core.text.safe_terminal), in text and attributes alike
const HIDDEN = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
function shown(text) {
  return String(text).replace(HIDDEN, (c) => {
    const n = c.charCodeAt(0);
    return n <= 0xff ? "\\x" + n.toString(16).padStart(2, "0") : "\\u" + n.toString(16).padStart(4, "0");
  });
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = shown(v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : shown(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(shown(c)));
  }
  return node;
}
const $ = (id) => document.getElementById(id);
const fmt = (x, d = 2) => (x === null || x === undefined ? "-" : Number(x).toFixed(d));

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  const key = $("api-key").value.trim();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

async function explain(resp) {
  let msg = resp.status + " " + resp.statusText;
  try {
    const body = await resp.json();
    if (body && body.message) msg = resp.status + ": " + body.message;
  } catch (e) { /* not JSON */ }
  const retry = resp.headers.get("Retry-After");
  return shown(retry ? msg + " (retry after " + retry + "s)" : msg);
}

// -- tabs ---------------------------------------------------------------------------------------
const TABS = ["ask", "trace", "cert", "audit", "search", "docs"];
function show(name) {
  for (const t of TABS) {
    const on = t === name;
    $("tab-" + t).setAttribute("aria-selected", on ? "true" : "false");
    $("tab-" + t).tabIndex = on ? 0 : -1;
    $("view-" + t).hidden = !on;
  }
  if (name === "docs") loadDocuments();
}
function setupTabs() {
  TABS.forEach((t, i) => {
    const tab = $("tab-" + t);
    tab.addEventListener("click", () => show(t));
    tab.addEventListener("keydown", (ev) => {
      const step = ev.key === "ArrowRight" ? 1 : ev.key === "ArrowLeft" ? -1 : 0;
      if (!step) return;
      const next = TABS[(i + step + TABS.length) % TABS.length];
      show(next);
      $("tab-" + next).focus();
    });
  });
  show("ask");
  const saved = sessionStorage.getItem("affidavit-key");
  if (saved) $("api-key").value = saved;
  $("api-key").addEventListener("change", () => sessionStorage.setItem("affidavit-key", $("api-key").value));
}

// -- ask ----------------------------------------------------------------------------------------
function decisionClass(outcome, mode) {
  if (outcome.decision === "verified") return "verified";
  if (mode === "strict") return "withheld";
  if (outcome.decision === "blocked" || outcome.verdict.label === "contradicted") return "contradicted";
  return "unverified";
}
const RANK = { verified: 0, unverified: 1, withheld: 2, contradicted: 3 };

function sentenceSegments(r) {
  // the answer's sentences exactly as the server rendered them (r.sentences): the same text as
  // r.answer, badges aside, so a citation shows only where the verifier found support (an
  // unverified sentence carries no "[n]"); never the model's draft (r.draft)
  const byId = new Map(r.claims.map((o) => [o.claim.id, o]));
  const out = [];
  for (const s of r.sentences || []) {
    if (!s.shown) continue;
    const outcomes = (s.claim_ids || []).map((id) => byId.get(id)).filter(Boolean);
    let cls = s.decision === "verified" && outcomes.length ? "verified" : "unverified";
    if (s.decision === "blocked") cls = "contradicted";
    for (const o of outcomes) {
      const c = decisionClass(o, "mixed");
      if (RANK[c] > RANK[cls]) cls = c;
    }
    out.push({ lead: s.lead || "", text: s.text, cls, outcomes });
  }
  return out;
}

function renderAnswer(resp) {
  const r = resp.result;
  const box = $("answer");
  box.replaceChildren();
  box.classList.remove("provisional");
  const segments = sentenceSegments(r);
  const p = el("p");
  for (const seg of segments) {
    if (seg.lead) p.append(shown(seg.lead));
    if (!seg.outcomes.length) {
      // no checkable claim: shown (not in strict mode), marked, nothing to open
      p.append(el("span", { class: "sentence " + seg.cls, text: seg.text, title: "no checkable claim" }));
      continue;
    }
    const b = el("button", {
      type: "button", class: "sentence " + seg.cls, text: seg.text,
      title: seg.cls, "aria-label": seg.cls + ": " + seg.text,
    });
    b.addEventListener("click", () => showEvidence(seg, resp, b));
    p.append(b);
  }
  // no sentence shown (an abstention, nothing verified in strict mode): the answer as it is
  if (!segments.length) p.append(shown(r.answer || "(nothing could be shown)"));
  if (r.mode === "strict" && r.claims.some((o) => o.decision !== "verified")) {
    p.append(" ", el("span", {
      class: "sentence withheld", text: "[withheld: not verified]",
      title: "strict mode: sentences that are not verified are not shown",
    }));
  }
  box.append(p);
  $("legend").hidden = !r.claims.length;
  $("answer-note").textContent = shown(r.note || "");
  const src = $("sources");
  src.replaceChildren();
  $("sources-title").hidden = !r.sources.length;
  for (const s of r.sources) {
    src.append(el("li", { value: s.number },
      (s.title || s.url || s.doc_id || s.chunk_id) + (s.origin === "web" ? " [web]" : "")));
  }
}

function highlighted(text, start, end) {
  const p = el("p", { class: "chunk" });
  p.append(shown(text.slice(0, start)), el("mark", { text: text.slice(start, end) }), shown(text.slice(end)));
  return p;
}

function showEvidence(seg, resp, button) {
  document.querySelectorAll(".sentence.selected").forEach((n) => n.classList.remove("selected"));
  button.classList.add("selected");
  const ctx = new Map(resp.result.trace.context.map((c) => [c.id, c]));
  const box = $("evidence");
  box.replaceChildren(el("h2", { text: "Evidence" }));
  for (const o of seg.outcomes) {
    const v = o.verdict;
    const card = el("article", { class: "claim-card " + decisionClass(o, resp.result.mode) });
    card.append(
      el("h3", { text: o.claim.text }),
      el("p", { class: "scores" },
        el("span", { text: "decision: " + o.decision }),
        el("span", { text: "label: " + v.label }),
        el("span", { text: "p_entail " + fmt(v.p_entail) }),
        el("span", { text: "p_contradict " + fmt(v.p_contradict) })),
    );
    if (v.reason) card.append(el("p", { class: "reason", text: v.reason }));
    if (!v.evidence.length) {
      // nothing supports or contradicts it: show what it was compared with (its cited passages,
      // else every passage the model saw), the values the checks looked up marked
      const cited = (o.claim.citations || []).map((n) => resp.result.trace.context[n - 1]).filter(Boolean);
      const compared = cited.length ? cited : resp.result.trace.context;
      const marks = v.checks.filter((c) => c.status === "fail" && c.evidence_value).map((c) => c.evidence_value);
      card.append(el("p", { class: "where", text: "No passage states it. Compared with:" }));
      for (const chunk of compared.slice(0, 3)) {
        const n = resp.result.trace.context.indexOf(chunk) + 1;
        card.append(el("p", { class: "where", text: "passage [" + n + "] " + (chunk.title || chunk.url || chunk.id) }));
        const at = marks.map((m) => [m, chunk.text.indexOf(m)]).find(([, i]) => i >= 0);
        card.append(at ? highlighted(chunk.text, at[1], at[1] + at[0].length) : el("p", { class: "chunk compared", text: chunk.text }));
      }
    }
    for (const ev of v.evidence) {
      const chunk = ctx.get(ev.chunk_id);
      const n = resp.result.trace.context.findIndex((c) => c.id === ev.chunk_id) + 1;
      card.append(el("p", { class: "where", text: "passage [" + (n || "?") + "] " + (chunk && (chunk.title || chunk.url) || ev.chunk_id) }));
      card.append(chunk ? highlighted(chunk.text, ev.start, ev.end) : el("p", { class: "chunk" }, el("mark", { text: ev.text })));
    }
    const checks = v.checks.filter((c) => c.status !== "not_applicable");
    if (checks.length) {
      const t = el("table", { class: "checks" },
        el("thead", {}, el("tr", {}, el("th", { text: "check" }), el("th", { text: "result" }), el("th", { text: "reason" }))));
      const tb = el("tbody");
      for (const c of checks) tb.append(el("tr", { class: c.status }, el("td", { text: c.check }), el("td", { text: c.status }), el("td", { text: c.reason })));
      t.append(tb);
      card.append(t);
    } else {
      card.append(el("p", { class: "empty", text: "No typed check applied (no numbers, dates, negations or comparisons)." }));
    }
    for (const e of v.errors) card.append(el("p", { class: "error", text: "error: " + e }));
    box.append(card);
  }
  box.hidden = false;
}

async function readEvents(resp, onEvent) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let name = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) onEvent(name, JSON.parse(data));
    }
  }
}

async function ask(ev) {
  ev.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  const status = $("ask-status");
  const box = $("answer");
  $("ask-button").disabled = true;
  $("evidence").hidden = true;
  $("legend").hidden = true;
  $("answer-note").textContent = "";
  $("sources").replaceChildren();
  $("sources-title").hidden = true;
  box.replaceChildren();
  box.classList.add("provisional");
  box.dataset.pieces = "0";
  state.tokens = "";
  state.live = { question, hits: null, grading: null, refinement: null, claims: [] };
  renderLiveTrace();
  status.textContent = "retrieving...";
  const stop = new AbortController();
  state.stop = stop;
  $("stop-button").hidden = false;
  try {
    const resp = await fetch("/v1/ask", {
      method: "POST",
      headers: { ...headers(true), Accept: "text/event-stream" },
      body: JSON.stringify({ question, mode: $("mode").value, correct: $("correct").checked }),
      signal: stop.signal,
    });
    if (!resp.ok) { status.textContent = await explain(resp); return; }
    await readEvents(resp, (name, data) => {
      if (name === "retrieval") { state.live.hits = data; renderLiveTrace(); status.textContent = data.hits.length + " chunks retrieved; grading..."; }
      else if (name === "grading") {
        state.live.grading = data;
        renderLiveTrace();
        const c = data.classification;
        status.textContent = shown(c ? "retrieval judged " + c.kind + " (max grade " + fmt(c.max_score, 1) + "); refining..." : "no grading (" + data.note + ")");
      } else if (name === "refinement") { state.live.refinement = data; renderLiveTrace(); status.textContent = data.context.length + " passages kept; generating..."; }
      else if (name === "token") {
        state.tokens += data.text;
        // strict mode shows nothing that is not verified, not even while it streams
        box.textContent = $("mode").value === "strict"
          ? "generating... (strict mode shows only verified sentences)" : shown(state.tokens);
        box.dataset.pieces = String(Number(box.dataset.pieces || 0) + 1);
        status.textContent = "generating (not yet verified)...";
      }
      else if (name === "claim") { state.live.claims.push(data.outcome); renderLiveTrace(); status.textContent = "verifying claims..."; }
      else if (name === "certificate") { setCertificate(data.certificate); }
      else if (name === "result") {
        state.response = data.response;
        renderAnswer(data.response);
        renderTrace(data.response);
        const n = data.response.result.claims.length;
        const ok = data.response.result.claims.filter((c) => c.decision === "verified").length;
        status.textContent = "done: " + ok + " of " + n + " claims verified (" + data.response.result.mode + " mode)";
      } else if (name === "error") { status.textContent = shown("failed: " + data.error.message); endTrace("failed: " + data.error.message); }
    });
  } catch (e) {
    endTrace(stop.signal.aborted ? "stopped: the question was cancelled" : "failed: " + (e.message || e));
    if (stop.signal.aborted) {
      // nothing unverified stays on the page: the provisional text goes with the stream
      box.replaceChildren();
      box.classList.remove("provisional");
      status.textContent = "stopped: the question was cancelled (nothing was verified)";
    } else {
      status.textContent = "failed: " + (e.message || e);
    }
  } finally {
    $("ask-button").disabled = false;
    $("stop-button").hidden = true;
    state.stop = null;
  }
}

// -- trace --------------------------------------------------------------------------------------
function table(head, rows) {
  const t = el("table", {}, el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { text: h })))));
  const tb = el("tbody");
  const cell = (c) => (c instanceof Node ? el("td", {}, c) : /^[\d.\s-]*[a-z]*$/.test(c) && c.length < 16 ? el("td", { class: "num", text: c }) : el("td", { text: c }));
  for (const r of rows) tb.append(el("tr", {}, ...r.map(cell)));
  t.append(tb);
  return el("div", { class: "scroll" }, t);
}

// The trace is drawn from one description of what is known so far: the stream's events while the
// answer runs (retrieval, grading, refinement, claims), then the result's whole trace.
function liveTrace(question) {
  const L = state.live;
  const g = L.grading;
  const r = L.refinement;
  return {
    question, done: false,
    hits: L.hits ? L.hits.hits : null,
    grades: g ? new Map(g.grades.map((x) => [x.chunk_id, x.score])) : null,
    gradingNote: g ? g.note : "",
    classification: g ? g.classification : null,
    stripThreshold: r ? r.strip_threshold : null,
    context: r ? r.context : null,
    origins: r ? r.origins : [],
    dropped: r ? r.dropped : [],
    fallback: null,
    web: r ? { ran: r.web_ran, queries: r.web_query ? [r.web_query] : [], results: [] } : null,
    claims: L.claims,
  };
}

function finalTrace(resp) {
  const t = resp.result.trace;
  const d = t.corrective_detail || {};
  const c = state.live && state.live.grading ? state.live.grading.classification : null;
  const classification = t.classification ? {
    kind: t.classification, max_score: d.max_score,
    upper_threshold: c ? c.upper_threshold : null, lower_threshold: c ? c.lower_threshold : null,
    reason: d.classification_reason || (c && c.reason) || "",
  } : null;
  return {
    question: resp.result.question, done: true,
    hits: t.retrieval_hits,
    grades: new Map(t.evaluator_scores.map((s) => [s.chunk_id, s.score])),
    gradingNote: "",
    classification,
    stripThreshold: d.strip_threshold,
    context: t.context,
    origins: [],
    dropped: d.dropped || [],
    fallback: d.fallback || null,
    web: { ran: t.web_queries.length > 0, queries: t.web_queries, results: t.web_results },
    claims: resp.result.claims,
    timings: t.timings, ttft: t.time_to_first_token_s, skipped: t.skipped_stages,
    quoteRetry: t.quote_retry || null,
  };
}

function endTrace(why) {
  // a stream that ends without its result: the trace says where it stopped
  const box = $("trace");
  if (box.dataset.live !== "running") return;
  box.dataset.live = "ended";
  box.append(el("p", { class: "error", text: why }));
}

function renderLiveTrace() {
  if (state.live) drawTrace(liveTrace(state.live.question));
}

function renderTrace(resp) {
  drawTrace(finalTrace(resp));
}

function drawTrace(p) {
  const box = $("trace");
  $("trace-empty").hidden = true;
  box.replaceChildren(el("h2", { text: "Question" }), el("p", { text: p.question }));
  box.dataset.live = p.done ? "done" : "running";
  if (!p.hits) { box.append(el("p", { class: "note", text: "retrieving..." })); return; }
  const why = new Map(((state.live && state.live.grading && state.live.grading.grades) || []).map((g) => [g.chunk_id, g]));
  box.append(el("h2", { text: "Retrieved chunks and grades (0-10)" }));
  box.append(table(["#", "grade", "retrieval", "source", "text"], p.hits.map((h) => {
    const g = p.grades ? p.grades.get(h.chunk.id) : undefined;
    const w = why.get(h.chunk.id);
    const grade = el("span", { text: g !== undefined ? fmt(g, 1) : p.grades ? "-" : "...", title: w ? (w.error || w.reason) : null });
    return [String(h.rank), grade, fmt(h.score, 3) + " " + h.mode,
      h.chunk.title || h.chunk.url || h.chunk.doc_id || "", h.chunk.text.slice(0, 220) + (h.chunk.text.length > 220 ? "..." : "")];
  })));
  if (!p.grades) { box.append(el("p", { class: "note", text: "grading..." })); return; }
  box.append(el("h2", { text: "Decision" }));
  const c = p.classification;
  if (c) {
    const limits = [];
    if (c.upper_threshold !== null && c.upper_threshold !== undefined) limits.push("correct >= " + fmt(c.upper_threshold, 1), "incorrect < " + fmt(c.lower_threshold, 1));
    if (p.stripThreshold !== null && p.stripThreshold !== undefined) limits.push("strip sentences < " + fmt(p.stripThreshold, 1));
    box.append(el("p", {}, el("strong", { class: "kind " + c.kind, text: c.kind.toUpperCase() }),
      " - max grade " + fmt(c.max_score, 1) + (limits.length ? "; thresholds: " + limits.join(", ") : "")));
    box.append(el("p", { class: "reason", text: c.reason || "" }));
  } else {
    box.append(el("p", { class: "empty", text: "Corrective retrieval did not run." + (p.gradingNote ? " (" + p.gradingNote + ")" : "") }));
  }
  if (!p.context) { box.append(el("p", { class: "note", text: "refining..." })); return; }
  box.append(el("h2", { text: "What refinement kept (the passages the model saw)" }));
  box.append(table(["#", "source", "text"], p.context.map((ch, i) => [String(i + 1),
    (ch.title || ch.url || ch.doc_id || "") + (p.origins[i] === "web" ? " [web]" : ""), ch.text])));
  const titles = new Map(p.hits.map((h, i) => [h.chunk.id, "[" + (i + 1) + "] " + (h.chunk.title || h.chunk.url || h.chunk.doc_id || h.chunk.id)]));
  for (const line of p.dropped) {
    const cut = line.indexOf(": ");
    const id = cut > 0 ? line.slice(0, cut) : "";
    const named = titles.has(id) ? titles.get(id) + ": " + line.slice(cut + 2) : line;
    box.append(el("p", { class: "note", text: "dropped: " + named }));
  }
  if (p.fallback) box.append(el("p", { class: "note", text: "kept whole: " + p.fallback }));
  box.append(el("h2", { text: "Web fallback" }));
  box.append(el("p", { text: p.web.queries.length ? "ran with the query: " + p.web.queries.join("; ") : p.web.ran ? "ran" : "did not run" }));
  if (p.web.results.length) box.append(table(["url", "used", "note"], p.web.results.map((w) => [w.url || "", w.used ? "yes" : "no", w.note])));
  box.append(el("h2", { text: "Claims" }));
  if (p.claims.length) {
    const claims = table(["claim", "decision", "label", "p_entail", "reason"], p.claims.map((o) => [
      o.claim.text, el("span", { class: "sentence " + decisionClass(o, "mixed"), text: o.decision }),
      o.verdict.label, fmt(o.verdict.p_entail), o.verdict.reason]));
    claims.classList.add("trace-claims");
    box.append(claims);
  } else {
    box.append(el("p", { class: "note", text: p.done ? "no claim" : "generating the answer; claims show as they are decided..." }));
  }
  if (!p.done) return;
  if (p.quoteRetry) {
    // strict mode, no claim of the draft verified: the model was asked to quote the passages
    const q = p.quoteRetry;
    box.append(el("h2", { text: "Quote retry" }));
    box.append(el("p", { class: "note", text: q.error
      ? "No claim of the draft was verified; asking the model to copy the passages' sentences failed: " + q.error
      : q.adopted
        ? "No claim of the first draft was verified, so the model was asked to copy the passages' sentences; the answer is that copy. The first draft's claims:"
        : "No claim of the draft was verified, nor of the model's copy of the passages' sentences. The copy's claims:" }));
    if (q.other_claims.length) {
      box.append(table(["claim", "decision", "label", "p_entail", "reason"], q.other_claims.map((o) => [
        o.claim.text, el("span", { class: "sentence " + decisionClass(o, "mixed"), text: o.decision }),
        o.verdict.label, fmt(o.verdict.p_entail), o.verdict.reason])));
    }
  }
  box.append(el("h2", { text: "Timings" }));
  box.append(table(["stage", "seconds", "note"], p.timings.map((s) => [s.stage, s.skipped ? "skipped" : fmt(s.seconds, 3), s.note])));
  if (p.ttft !== null) box.append(el("p", { text: "first token after " + fmt(p.ttft, 2) + " s" }));
  for (const s of p.skipped) box.append(el("p", { class: "note", text: s }));
}

// -- certificate --------------------------------------------------------------------------------
function setCertificate(cert) {
  state.certificate = cert;
  $("cert-download").disabled = false;
  $("cert-summary").className = "";
  $("cert-summary").textContent = shown("Signed by key " + cert.key_id + " at " + cert.created_at + "; " + cert.claims.length + " claims.");
  $("cert-content").replaceChildren(...certificateContent(cert));
}

function certificateContent(cert, checked = true) {
  // what the signature covers, as a reader checks it: the question, the answer, each claim; a
  // file whose certificate is not valid only says so: no decision of it is shown as one
  const out = [];
  if (!checked) out.push(el("p", { class: "note", text: "What the file says (not verified: the certificate is invalid):" }));
  if (cert.question) out.push(el("h3", { text: "Question" }), el("p", { class: "cert-question", text: cert.question }));
  out.push(el("h3", { text: "Answer" }), el("p", { class: "chunk cert-answer", text: cert.answer }));
  const ol = el("ol", { class: "cert-claims" });
  for (const c of cert.claims) {
    const cls = !checked ? "withheld" : c.decision === "verified" ? "verified" : c.label === "contradicted" ? "contradicted" : "unverified";
    ol.append(el("li", {}, el("span", { class: "sentence " + cls, text: checked ? c.decision : "says " + c.decision }), " ", c.claim.text,
      el("span", { class: "note", text: " (" + c.reason + ")" })));
  }
  out.push(el("h3", { text: "Claims" }), ol);
  return out;
}

function download() {
  if (!state.certificate) return;
  const blob = new Blob([JSON.stringify(state.certificate, null, 2)], { type: "application/json" });
  const a = el("a", { href: URL.createObjectURL(blob), download: "answer.cert.json" });
  document.body.append(a);
  a.click();
  a.remove();
}

async function verifyFile(file) {
  const out = $("verify-result");
  out.replaceChildren(el("p", { text: "checking " + file.name + "..." }));
  // the server checks the file's own bytes, as `certificate verify` reads them (a duplicate key
  // refused), never this page's reading of them (the last of two answers kept)
  let raw, tree;
  try {
    raw = await file.arrayBuffer();
    tree = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
  } catch (e) {
    out.replaceChildren(el("p", { class: "invalid", text: "INVALID: " + file.name + " is not JSON (" + e.message + ")" }));
    return;
  }
  let resp, r;
  try {
    resp = await fetch("/v1/certificates/verify", { method: "POST", headers: headers(true), body: raw });
    if (!resp.ok) { out.replaceChildren(el("p", { class: "invalid", text: await explain(resp) })); return; }
    r = await resp.json();
  } catch (e) {
    out.replaceChildren(el("p", { class: "error", text: "failed: the server could not be reached (" + e.message + ")" }));
    return;
  }
  const valid = r.valid === true;
  out.replaceChildren(el("p", { class: valid ? "valid" : "invalid", text: valid ? "VALID" : "INVALID" }));
  if (tree && typeof tree.answer === "string" && Array.isArray(tree.claims)) {
    try { out.append(...certificateContent(tree, valid)); } catch (e) { /* a malformed claim list: the verdict says so */ }
  }
  if (r.key_id) out.append(el("p", { text: (valid ? "signed by key " : "names key ") + r.key_id }));
  if (valid) out.append(el("p", { text: r.evidence_checked + " evidence hashes checked" }));
  const ul = el("ul");
  for (const reason of r.reasons) ul.append(el("li", { text: reason }));
  for (const w of r.warnings || []) ul.append(el("li", { class: "note", text: "warning: " + w }));
  out.append(ul);
}

function setupDrop() {
  const zone = $("dropzone");
  const input = $("cert-file");
  zone.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); input.click(); } });
  zone.addEventListener("dragover", (ev) => { ev.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (ev) => {
    ev.preventDefault();
    zone.classList.remove("over");
    if (ev.dataTransfer.files.length) verifyFile(ev.dataTransfer.files[0]);
  });
  input.addEventListener("change", () => { if (input.files.length) verifyFile(input.files[0]); });
  $("cert-download").addEventListener("click", download);
}

// -- audit --------------------------------------------------------------------------------------
const FRESHNESS = { supported_fresh: "fresh", supported_stale: "stale", unsupported: "-" };

function parseChunks(text) {
  return text.split(/\n\s*\n/).map((p) => p.trim()).filter(Boolean).map((p) => {
    const m = p.match(/^url:\s*(\S+)\s*\n([\s\S]*)$/);
    return m ? { text: m[2].trim(), url: m[1] } : { text: p };
  });
}

// a claim's outcome: a failed typed check means a source says otherwise
function auditOutcome(c) {
  if (c.failed_checks.length) return "contradicted";
  return c.supported ? "supported" : "unsupported";
}
const AUDIT_WORDS = { supported: "supported", unsupported: "not supported", contradicted: "contradicted by a source" };
const AUDIT_RANK = { supported: 0, unsupported: 1, contradicted: 2 };

function auditTitle(c, blocked) {
  let t = AUDIT_WORDS[auditOutcome(c)] + (blocked ? ", withheld" : "") + ": " + (c.reason || "");
  if (c.freshness === "supported_stale") t += " (stale source)";
  return t;
}

function auditedAnswer(r) {
  // the answer as audited, each claim's text marked by its outcome; claims from one sentence
  // share their offsets and show the worst of them
  const wrap = el("section", { class: "audited", "aria-label": "The audited answer" });
  wrap.append(el("h3", { text: "The audited answer" }));
  const blocking = r.mode !== "audit" && r.guarded_response !== null;
  const groups = new Map();
  for (const c of r.claims) {
    const k = c.start + ":" + c.end;
    if (!groups.has(k)) groups.set(k, { start: c.start, end: c.end, claims: [] });
    groups.get(k).claims.push(c);
  }
  const spans = [...groups.values()].sort((a, b) => a.start - b.start || b.end - a.end);
  const text = r.response || "";
  const p = el("p", { class: "answer audited-text" });
  let pos = 0;
  for (const s of spans) {
    if (s.start < pos || s.end > text.length || s.end <= s.start) continue; // nested or off the text
    if (s.start > pos) p.append(shown(text.slice(pos, s.start)));
    let cls = "supported";
    for (const c of s.claims) if (AUDIT_RANK[auditOutcome(c)] > AUDIT_RANK[cls]) cls = auditOutcome(c);
    const blocked = blocking && cls !== "supported";
    const title = s.claims.map((c) => auditTitle(c, blocking && !c.supported)).join("\n");
    const b = el("button", {
      type: "button", class: "sentence audit-claim " + cls + (blocked ? " blocked" : ""),
      text: text.slice(s.start, s.end), title,
      "aria-label": AUDIT_WORDS[cls] + (blocked ? ", withheld" : "") + ": " + text.slice(s.start, s.end),
    });
    b.addEventListener("click", () => showAuditClaims(s.claims, b, blocking, text.slice(s.start, s.end)));
    p.append(b);
    pos = s.end;
  }
  if (pos < text.length) p.append(shown(text.slice(pos)));
  wrap.append(p);
  const legend = el("div", { class: "legend" },
    el("span", { class: "sentence supported", text: "supported" }),
    el("span", { class: "sentence unsupported", text: "not supported" }),
    el("span", { class: "sentence contradicted", text: "contradicted" }));
  if (blocking) legend.append(el("span", { class: "sentence unsupported blocked", text: "withheld (" + r.mode + ")" }));
  legend.append(el("span", { class: "hint", text: "Hover for the reason; select a claim for its evidence." }));
  wrap.append(legend);
  wrap.append(el("section", { id: "audit-evidence", class: "evidence", "aria-live": "polite", hidden: true }));
  return wrap;
}

function showAuditClaims(claims, button, blocking, said) {
  document.querySelectorAll(".audit-claim.selected").forEach((n) => n.classList.remove("selected"));
  button.classList.add("selected");
  const box = $("audit-evidence");
  box.replaceChildren(el("h3", { text: "Evidence" }));
  for (const c of claims) {
    const outcome = auditOutcome(c);
    const card = el("article", { class: "claim-card " + outcome });
    card.append(el("h3", { text: c.text }));
    // the claim as checked can read differently from the answer ("It" resolved to its name)
    if (c.text.trim() !== said.trim()) card.append(el("p", { class: "where", text: "from the answer: " + said }));
    card.append(
      el("p", { class: "scores" },
        el("span", { text: "outcome: " + AUDIT_WORDS[outcome] + (blocking && !c.supported ? " (withheld)" : "") }),
        el("span", { text: "confidence " + fmt(c.confidence) }),
        el("span", { text: "freshness: " + (FRESHNESS[c.freshness] || c.freshness) + (c.source_date ? " (" + c.source_date + ")" : "") })),
    );
    if (c.reason) card.append(el("p", { class: "reason", text: c.reason }));
    if (c.evidence) {
      card.append(el("p", { class: "where", text: "best passage: " + (c.source_url || c.chunk_id || "") }));
      card.append(el("p", { class: "chunk" }, el("mark", { text: c.evidence.text })));
    } else {
      card.append(el("p", { class: "where", text: "No passage states it." }));
    }
    const checks = c.checks.filter((k) => k.status !== "not_applicable");
    if (checks.length) {
      const t = el("table", { class: "checks" },
        el("thead", {}, el("tr", {}, el("th", { text: "check" }), el("th", { text: "result" }), el("th", { text: "reason" }))));
      const tb = el("tbody");
      for (const k of checks) tb.append(el("tr", { class: k.status }, el("td", { text: k.check }), el("td", { text: k.status }), el("td", { text: k.reason })));
      t.append(tb);
      card.append(t);
    }
    if (c.verdict) card.append(el("p", { class: "note", text: "verifier: " + c.verdict.label + ", p_entail " + fmt(c.verdict.p_entail) }));
    box.append(card);
  }
  box.hidden = false;
}

async function audit(ev) {
  ev.preventDefault();
  const status = $("audit-status");
  const out = $("audit-report");
  status.textContent = "auditing...";
  out.replaceChildren();
  const params = new URLSearchParams();
  if ($("audit-mode").value) params.set("mode", $("audit-mode").value);
  if ($("audit-verify").checked) params.set("verify", "true");
  const body = { query: $("audit-query").value, chunks: parseChunks($("audit-chunks").value), response: $("audit-response").value };
  let resp, r;
  try {
    resp = await fetch("/v1/audit?" + params, { method: "POST", headers: headers(true), body: JSON.stringify(body) });
    if (!resp.ok) { status.textContent = await explain(resp); return; }
    r = await resp.json();
  } catch (e) {
    status.textContent = "failed: the server could not be reached (" + e.message + ")";
    return;
  }
  status.textContent = "";
  const ok = r.claims.filter((c) => c.supported).length;
  out.append(el("p", { class: r.trust_passed ? "valid" : "invalid",
    text: (r.trust_passed ? "TRUST PASSED" : "TRUST FAILED") + " - compliance " + Math.round(r.compliance_rate * 100) + "% (" + ok + "/" + r.claims.length + " claims), mode " + r.mode + ", " + r.n_chunks_used + "/" + r.n_chunks + " chunks used" }));
  out.append(auditedAnswer(r));
  out.append(el("h3", { text: "Claims" }));
  const claimTable = table(["claim", "supported", "confidence", "source", "freshness", "evidence / reason"], r.claims.map((c) => [
    c.text, c.supported ? "yes" : "no", fmt(c.confidence), c.source_url || c.chunk_id || "-", (FRESHNESS[c.freshness] || c.freshness) + (c.source_date ? " (" + c.source_date + ")" : ""),
    c.supported && c.evidence ? c.evidence.text : c.reason,
  ]));
  claimTable.classList.add("audit-claims");
  out.append(claimTable);
  if (r.blocked_sources.length) {
    out.append(el("h3", { text: "Blocked sources (allowlist)" }));
    out.append(table(["source", "reason", "detail"], r.blocked_sources.map((b) => [b.url || b.chunk_id, b.reason, b.detail])));
  }
  if (r.policy_issues.length) {
    out.append(el("h3", { text: "Policy issues" }));
    const ul = el("ul");
    for (const i of r.policy_issues) ul.append(el("li", { text: i.kind + ": " + i.message }));
    out.append(ul);
  }
  if (r.guarded_response !== null) out.append(el("h3", { text: "Guarded response" }), el("p", { text: r.guarded_response }));
}

// -- search -------------------------------------------------------------------------------------
async function search(ev) {
  ev.preventDefault();
  const q = $("search-query").value.trim();
  if (!q) return;
  const status = $("search-status");
  const out = $("search-results");
  status.textContent = "searching...";
  out.replaceChildren();
  const params = new URLSearchParams({ q, k: $("search-k").value || "5" });
  if ($("search-mode").value) params.set("mode", $("search-mode").value);
  let resp, r;
  try {
    resp = await fetch("/v1/search?" + params, { headers: headers(false) });
    if (!resp.ok) { status.textContent = await explain(resp); return; }
    r = await resp.json();
  } catch (e) {
    status.textContent = "failed: the server could not be reached (" + e.message + ")";
    return;
  }
  status.textContent = r.hits.length + " results (" + r.mode + " ranking)";
  for (const h of r.hits) {
    const c = h.chunk;
    out.append(el("li", { class: "hit", value: h.rank },
      el("p", { class: "where" },
        el("strong", { text: c.title || c.url || c.doc_id || c.id }),
        " - score " + fmt(h.score, 3) + " " + h.mode + (c.url && c.title ? " - " + c.url : "")),
      el("p", { class: "chunk", text: c.text })));
  }
}

// -- documents ----------------------------------------------------------------------------------
async function call(url, init) {
  // fetch, and the answer as JSON or the reason it failed, in words
  let resp;
  try { resp = await fetch(url, init); } catch (e) {
    return { error: "failed: the server could not be reached (" + e.message + ")" };
  }
  if (!resp.ok) return { error: await explain(resp) };
  return { body: await resp.json() };
}

async function loadDocuments() {
  const status = $("docs-status");
  status.textContent = "loading...";
  const { body, error } = await call("/v1/documents", { headers: headers(false) });
  if (error) { status.textContent = error; return; }
  status.textContent = body.documents.length + " documents, " + body.chunks_total + " chunks";
  const t = el("table", { class: "docs", "aria-labelledby": "docs-title" },
    el("thead", {}, el("tr", {}, el("th", { text: "name" }), el("th", { text: "title" }),
      el("th", { class: "col-type", text: "type" }), el("th", { text: "chunks" }), el("th", { text: "" }))));
  const tb = el("tbody");
  for (const d of body.documents) {
    const show = el("button", { type: "button", class: "secondary", text: "Show", "aria-label": "Show " + d.source });
    show.addEventListener("click", () => showDocument(d.id));
    const del = el("button", { type: "button", class: "danger", text: "Delete", "aria-label": "Delete " + d.source });
    del.addEventListener("click", () => confirmDelete(d, del));
    const names = d.names.length > 1 ? " (also: " + d.names.slice(1).join(", ") + ")" : "";
    tb.append(el("tr", { "data-doc": d.id },
      el("td", { class: "doc-name", text: d.source + names }),
      el("td", { text: d.title || "" }),
      el("td", { class: "col-type", text: d.mime }),
      el("td", { class: "num", text: String(d.chunks) }),
      el("td", { class: "actions" }, show, del)));
  }
  t.append(tb);
  $("docs-list").replaceChildren(el("div", { class: "scroll" }, t));
}

async function showDocument(id) {
  const box = $("doc-detail");
  box.hidden = false;
  box.replaceChildren(el("p", { text: "loading..." }));
  const { body, error } = await call("/v1/documents/" + encodeURIComponent(id), { headers: headers(false) });
  if (error) { box.replaceChildren(el("p", { class: "error", text: error })); return; }
  const dl = el("dl", { class: "facts" });
  for (const [k, v] of [["id", body.id], ["names", body.names.join(", ")], ["title", body.title || "-"],
    ["type", body.mime], ["chunks", String(body.chunks)], ["sha256", body.content_hash]]) {
    dl.append(el("dt", { text: k }), el("dd", { text: v }));
  }
  const title = el("h3", { text: body.source, tabindex: "-1" });
  box.replaceChildren(title, dl);
  title.focus();
}

function confirmDelete(doc, button) {
  // deleting is not undone: ask in the page, the focus on the answer to give
  const box = $("doc-detail");
  const yes = el("button", { type: "button", class: "danger", id: "doc-delete-confirm", text: "Delete it" });
  const no = el("button", { type: "button", class: "secondary", text: "Cancel" });
  no.addEventListener("click", () => { box.hidden = true; box.replaceChildren(); button.focus(); });
  yes.addEventListener("click", () => deleteDocument(doc));
  box.replaceChildren(
    el("p", { role: "alert", text: "Delete " + doc.source + "? Its " + doc.chunks + " chunks leave the store; certificates that cite them will say so." }),
    el("div", { class: "row" }, yes, no));
  box.hidden = false;
  yes.focus();
}

async function deleteDocument(doc) {
  const box = $("doc-detail");
  const { body, error } = await call("/v1/documents/" + encodeURIComponent(doc.id), { method: "DELETE", headers: headers(false) });
  if (error) { box.replaceChildren(el("p", { class: "error", text: error })); return; }
  box.replaceChildren(el("p", { text: "deleted " + body.source + ": " + body.chunks_removed + " chunks removed" }));
  await loadDocuments();
}

async function upload(ev) {
  ev.preventDefault();
  const input = $("upload-files");
  if (!input.files.length) return;
  const status = $("upload-status");
  const out = $("upload-job");
  const form = new FormData();
  for (const f of input.files) form.append("files", f, f.name);
  $("upload-button").disabled = true;
  status.textContent = "uploading...";
  out.replaceChildren();
  try {
    let { body: job, error } = await call("/v1/documents", { method: "POST", headers: headers(false), body: form });
    while (!error && (job.state === "queued" || job.state === "running")) {
      status.textContent = shown("job " + job.id + ": " + job.state + "...");
      await new Promise((done) => setTimeout(done, 400));
      ({ body: job, error } = await call("/v1/jobs/" + encodeURIComponent(job.id), { headers: headers(false) }));
    }
    if (error) { status.textContent = error; return; }
    status.textContent = shown("job " + job.id + ": " + job.state + (job.error ? " (" + job.error + ")" : ""));
    out.append(table(["file", "outcome", "chunks", "reason"],
      job.outcomes.map((o) => [o.source, o.status, String(o.chunks), o.reason || ""])));
    input.value = "";
    await loadDocuments();
  } finally {
    $("upload-button").disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  setupTabs();
  setupDrop();
  $("ask-form").addEventListener("submit", ask);
  $("stop-button").addEventListener("click", () => { if (state.stop) state.stop.abort(); });
  $("audit-form").addEventListener("submit", audit);
  $("search-form").addEventListener("submit", search);
  $("upload-form").addEventListener("submit", upload);
  $("docs-refresh").addEventListener("click", loadDocuments);
});
