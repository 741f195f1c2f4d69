// The affidavit page: plain DOM, no dependencies. Every piece of text that comes from the server
// (answers, chunks, reasons) is put in the page with textContent, never parsed as HTML.
"use strict";

const state = { response: null, certificate: null, tokens: "" };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
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
  return retry ? msg + " (retry after " + retry + "s)" : msg;
}

// -- tabs ---------------------------------------------------------------------------------------
const TABS = ["ask", "trace", "cert", "audit"];
function show(name) {
  for (const t of TABS) {
    const on = t === name;
    $("tab-" + t).setAttribute("aria-selected", on ? "true" : "false");
    $("tab-" + t).tabIndex = on ? 0 : -1;
    $("view-" + t).hidden = !on;
  }
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

function claimSpans(claims) {
  // the claims grouped by the draft span they came from, in reading order
  const groups = new Map();
  for (const o of claims) {
    const k = o.claim.start + ":" + o.claim.end;
    if (!groups.has(k)) groups.set(k, { start: o.claim.start, end: o.claim.end, outcomes: [] });
    groups.get(k).outcomes.push(o);
  }
  return [...groups.values()].sort((a, b) => a.start - b.start || b.end - a.end);
}

function segmentsOf(draft, claims, mode) {
  // group claims by the answer text they came from; a group shows its worst decision
  const spans = claimSpans(claims);
  const out = [];
  let pos = 0;
  for (const s of spans) {
    if (s.start < pos) continue; // nested inside an earlier span: shown with it
    if (s.start > pos) out.push({ text: draft.slice(pos, s.start) });
    let cls = "verified";
    for (const o of s.outcomes) {
      const c = decisionClass(o, mode);
      if (RANK[c] > RANK[cls]) cls = c;
    }
    out.push({ text: draft.slice(s.start, s.end), cls, outcomes: s.outcomes });
    pos = s.end;
  }
  if (pos < draft.length) out.push({ text: draft.slice(pos) });
  return out;
}

function strictSegments(r) {
  // strict mode shows exactly the guarded answer (r.answer): its verified claims are marked,
  // and nothing of a withheld sentence appears, not even as a clickable claim
  const answer = r.answer || "";
  const spans = claimSpans(r.claims.filter((o) => o.decision === "verified"));
  const out = [];
  let pos = 0;
  for (const s of spans) {
    const text = r.draft.slice(s.start, s.end);
    const at = answer.indexOf(text, pos);
    if (!text || at < 0) continue; // a verified claim inside a withheld sentence: not shown
    if (at > pos) out.push({ text: answer.slice(pos, at) });
    out.push({ text, cls: "verified", outcomes: s.outcomes });
    pos = at + text.length;
  }
  if (pos < answer.length) out.push({ text: answer.slice(pos) });
  return out;
}

function renderAnswer(resp) {
  const r = resp.result;
  const box = $("answer");
  box.replaceChildren();
  box.classList.remove("provisional");
  if (r.mode === "strict") {
    const p = el("p");
    for (const seg of strictSegments(r)) {
      if (!seg.cls) { p.append(seg.text); continue; }
      const b = el("button", {
        type: "button", class: "sentence verified", text: seg.text,
        title: "verified", "aria-label": "verified: " + seg.text,
      });
      b.addEventListener("click", () => showEvidence(seg, resp, b));
      p.append(b);
    }
    if (!r.answer) p.append("(nothing could be shown)");
    if (r.claims.some((o) => o.decision !== "verified")) {
      p.append(" ", el("span", {
        class: "sentence withheld", text: "[withheld: not verified]",
        title: "strict mode: sentences that are not verified are not shown",
      }));
    }
    box.append(p);
  } else if (!r.claims.length) {
    box.append(el("p", { text: r.answer || "(nothing could be shown)" }));
  } else {
    const p = el("p");
    for (const seg of segmentsOf(r.draft, r.claims, r.mode)) {
      if (!seg.cls) { p.append(seg.text); continue; }
      const b = el("button", {
        type: "button", class: "sentence " + seg.cls, text: seg.text,
        title: seg.cls, "aria-label": seg.cls + ": " + seg.text,
      });
      b.addEventListener("click", () => showEvidence(seg, resp, b));
      p.append(b);
    }
    box.append(p);
  }
  $("legend").hidden = !r.claims.length;
  $("answer-note").textContent = r.note || "";
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
  p.append(text.slice(0, start), el("mark", { text: text.slice(start, end) }), text.slice(end));
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
  state.live = { hits: null, grading: null, refinement: null };
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
      if (name === "retrieval") { state.live.hits = data; status.textContent = data.hits.length + " chunks retrieved; grading..."; }
      else if (name === "grading") {
        state.live.grading = data;
        const c = data.classification;
        status.textContent = c ? "retrieval judged " + c.kind + " (max grade " + fmt(c.max_score, 1) + "); refining..." : "no grading (" + data.note + ")";
      } else if (name === "refinement") { state.live.refinement = data; status.textContent = data.context.length + " passages kept; generating..."; }
      else if (name === "token") {
        state.tokens += data.text;
        // strict mode shows nothing that is not verified, not even while it streams
        box.textContent = $("mode").value === "strict"
          ? "generating... (strict mode shows only verified sentences)" : state.tokens;
        box.dataset.pieces = String(Number(box.dataset.pieces || 0) + 1);
        status.textContent = "generating (not yet verified)...";
      }
      else if (name === "claim") { status.textContent = "verifying claims..."; }
      else if (name === "certificate") { setCertificate(data.certificate); }
      else if (name === "result") {
        state.response = data.response;
        renderAnswer(data.response);
        renderTrace(data.response);
        const n = data.response.result.claims.length;
        const ok = data.response.result.claims.filter((c) => c.decision === "verified").length;
        status.textContent = "done: " + ok + " of " + n + " claims verified (" + data.response.result.mode + " mode)";
      } else if (name === "error") { status.textContent = "failed: " + data.error.message; }
    });
  } catch (e) {
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

function renderTrace(resp) {
  const t = resp.result.trace;
  const box = $("trace");
  $("trace-empty").hidden = true;
  box.replaceChildren(el("h2", { text: "Question" }), el("p", { text: resp.result.question }));
  const grades = new Map(t.evaluator_scores.map((s) => [s.chunk_id, s]));
  const why = new Map(((state.live && state.live.grading && state.live.grading.grades) || []).map((g) => [g.chunk_id, g]));
  box.append(el("h2", { text: "Retrieved chunks and grades (0-10)" }));
  box.append(table(["#", "grade", "retrieval", "source", "text"], t.retrieval_hits.map((h) => {
    const g = grades.get(h.chunk.id);
    const w = why.get(h.chunk.id);
    const grade = el("span", { text: g ? fmt(g.score, 1) : "-", title: w ? (w.error || w.reason) : null });
    return [String(h.rank), grade, fmt(h.score, 3) + " " + h.mode,
      h.chunk.title || h.chunk.url || h.chunk.doc_id || "", h.chunk.text.slice(0, 220) + (h.chunk.text.length > 220 ? "..." : "")];
  })));
  // the trace names the decision; its thresholds came with the live grading event
  const kind = t.classification;
  const d = t.corrective_detail || {};
  const c = state.live && state.live.grading ? state.live.grading.classification : null;
  box.append(el("h2", { text: "Decision" }));
  if (kind) {
    const limits = c ? "correct >= " + fmt(c.upper_threshold, 1) + ", incorrect < " + fmt(c.lower_threshold, 1) + ", " : "";
    box.append(el("p", {}, el("strong", { class: "kind " + kind, text: kind.toUpperCase() }),
      " - max grade " + fmt(d.max_score, 1) + "; thresholds: " + limits + "strip sentences < " + fmt(d.strip_threshold, 1)));
    box.append(el("p", { class: "reason", text: d.classification_reason || (c && c.reason) || "" }));
  } else {
    box.append(el("p", { class: "empty", text: "Corrective retrieval did not run." }));
  }
  box.append(el("h2", { text: "What refinement kept (the passages the model saw)" }));
  box.append(table(["#", "source", "text"], t.context.map((ch, i) => [String(i + 1), ch.title || ch.url || ch.doc_id || "", ch.text])));
  const titles = new Map(t.retrieval_hits.map((h, i) => [h.chunk.id, "[" + (i + 1) + "] " + (h.chunk.title || h.chunk.url || h.chunk.doc_id || h.chunk.id)]));
  for (const line of t.corrective_detail.dropped || []) {
    const cut = line.indexOf(": ");
    const id = cut > 0 ? line.slice(0, cut) : "";
    const named = titles.has(id) ? titles.get(id) + ": " + line.slice(cut + 2) : line;
    box.append(el("p", { class: "note", text: "dropped: " + named }));
  }
  if (d.fallback) box.append(el("p", { class: "note", text: "kept whole: " + d.fallback }));
  box.append(el("h2", { text: "Web fallback" }));
  box.append(el("p", { text: t.web_queries.length ? "ran with the query: " + t.web_queries.join("; ") : "did not run" }));
  if (t.web_results.length) box.append(table(["url", "used", "note"], t.web_results.map((w) => [w.url || "", w.used ? "yes" : "no", w.note])));
  box.append(el("h2", { text: "Timings" }));
  box.append(table(["stage", "seconds", "note"], t.timings.map((s) => [s.stage, s.skipped ? "skipped" : fmt(s.seconds, 3), s.note])));
  if (t.time_to_first_token_s !== null) box.append(el("p", { text: "first token after " + fmt(t.time_to_first_token_s, 2) + " s" }));
  for (const s of t.skipped_stages) box.append(el("p", { class: "note", text: s }));
}

// -- certificate --------------------------------------------------------------------------------
function setCertificate(cert) {
  state.certificate = cert;
  $("cert-download").disabled = false;
  $("cert-summary").className = "";
  $("cert-summary").textContent = "Signed by key " + cert.key_id + " at " + cert.created_at + "; " + cert.claims.length + " claims.";
  $("cert-content").replaceChildren(...certificateContent(cert));
}

function certificateContent(cert) {
  // what the signature covers, as a reader checks it: the question, the answer, each claim
  const out = [];
  if (cert.question) out.push(el("h3", { text: "Question" }), el("p", { class: "cert-question", text: cert.question }));
  out.push(el("h3", { text: "Answer" }), el("p", { class: "chunk cert-answer", text: cert.answer }));
  const ol = el("ol", { class: "cert-claims" });
  for (const c of cert.claims) {
    const cls = c.decision === "verified" ? "verified" : c.label === "contradicted" ? "contradicted" : "unverified";
    ol.append(el("li", {}, el("span", { class: "sentence " + cls, text: c.decision }), " ", c.claim.text,
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
  let tree;
  try { tree = JSON.parse(await file.text()); } catch (e) {
    out.replaceChildren(el("p", { class: "invalid", text: "INVALID: " + file.name + " is not JSON (" + e.message + ")" }));
    return;
  }
  let resp, r;
  try {
    resp = await fetch("/v1/certificates/verify", { method: "POST", headers: headers(true), body: JSON.stringify(tree) });
    if (!resp.ok) { out.replaceChildren(el("p", { class: "invalid", text: await explain(resp) })); return; }
    r = await resp.json();
  } catch (e) {
    out.replaceChildren(el("p", { class: "error", text: "failed: the server could not be reached (" + e.message + ")" }));
    return;
  }
  out.replaceChildren(el("p", { class: r.valid ? "valid" : "invalid", text: r.valid ? "VALID" : "INVALID" }));
  if (tree && typeof tree.answer === "string" && Array.isArray(tree.claims)) {
    try { out.append(...certificateContent(tree)); } catch (e) { /* a malformed claim list: the verdict says so */ }
  }
  if (r.key_id) out.append(el("p", { text: "signed by key " + r.key_id }));
  if (r.valid) out.append(el("p", { text: r.evidence_checked + " evidence hashes checked" }));
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
  out.append(table(["claim", "supported", "confidence", "source", "freshness", "evidence / reason"], r.claims.map((c) => [
    c.text, c.supported ? "yes" : "no", fmt(c.confidence), c.source_url || c.chunk_id || "-", (FRESHNESS[c.freshness] || c.freshness) + (c.source_date ? " (" + c.source_date + ")" : ""),
    c.supported && c.evidence ? c.evidence.text : c.reason,
  ])));
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

document.addEventListener("DOMContentLoaded", () => {
  setupTabs();
  setupDrop();
  $("ask-form").addEventListener("submit", ask);
  $("stop-button").addEventListener("click", () => { if (state.stop) state.stop.abort(); });
  $("audit-form").addEventListener("submit", audit);
});
