"""Certificate size and sign/verify time per certificate, for 3, 10 and 50 claims.

Side by side with the baseline of the field, CertiRAG's unkeyed SHA-256 "seal" (a hash of the
JSON anyone can recompute), measured on the same certificates in the same run.

For each size: build the certificate (policy decisions included), sign it (canonical JSON +
Ed25519), write it, and verify it from the file (strict read, schema, signature, trust, evidence
hashes, decision consistency). Every evidence span carries its text, so the sizes are the
self-contained (offline-checkable) form.

Also the policy on the audit stage's perturbation suite (``benchmarks/audit_perturbations.py``,
test half): no perturbed answer may have a sentence shown in strict mode.

Usage:
    python benchmarks/certificates.py [DATA] [--repeats 50] [--per-type 100]
        [--out benchmarks/results/certificates.json]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import affidavit
from affidavit.certify import (
    build_certificate,
    canonical_bytes,
    sign_certificate,
    signed_payload,
    verify_certificate,
    write_certificate,
)
from affidavit.core.settings import Settings
from affidavit.core.types import CheckResult, Claim, EvidenceSpan, StageScore, Verdict

ROOT = Path(__file__).resolve().parents[1]
SIZES = (3, 10, 50)

SENTENCE = "In {y} the committee reported that plant {i} produced {n} tonnes of steel [{c}]."
EVIDENCE = (
    "According to the annual report of the regional committee, published in {y}, plant {i} "
    "produced {n} tonnes of steel over the year, an increase on the previous period that the "
    "committee attributed to the new furnaces installed in the spring."
)


def make_case(n: int) -> tuple[str, list[Claim], list[Verdict]]:
    """n sentences, one claim each: 70% supported, 20% unsupported, 10% contradicted."""
    parts: list[str] = []
    claims: list[Claim] = []
    verdicts: list[Verdict] = []
    pos = 0
    for i in range(n):
        y, t = 1950 + i, 1000 + 37 * i
        sentence = SENTENCE.format(y=y, i=i, n=t, c=i + 1)
        claims.append(
            Claim(id=f"c{i + 1}", text=sentence, start=pos, end=pos + len(sentence), type="numeric")
        )
        parts.append(sentence)
        pos += len(sentence) + 1
        ev_text = EVIDENCE.format(y=y, i=i, n=t if i % 10 != 9 else t + 5)
        span = EvidenceSpan(
            chunk_id=f"chunk-{i:016x}", doc_id=f"doc-{i}", start=0, end=len(ev_text), text=ev_text
        )
        stage = StageScore(
            stage="cross_encoder",
            p_entail=0.9,
            p_neutral=0.07,
            p_contradict=0.03,
            label="supported",
        )
        if i % 10 == 9:
            v = Verdict(
                claim_id=f"c{i + 1}",
                label="contradicted",
                p_entail=0.02,
                p_neutral=0.08,
                p_contradict=0.9,
                evidence=(span,),
                checks=(
                    CheckResult(
                        check="number", status="fail", claim_value=str(t), evidence_value=str(t + 5)
                    ),
                ),
                stages=(stage,),
            )
        elif i % 10 in (7, 8):
            v = Verdict(
                claim_id=f"c{i + 1}",
                label="unsupported",
                p_entail=0.3,
                p_neutral=0.65,
                p_contradict=0.05,
                evidence=(span,),
                stages=(stage,),
            )
        else:
            v = Verdict(
                claim_id=f"c{i + 1}",
                label="supported",
                p_entail=0.9,
                p_neutral=0.07,
                p_contradict=0.03,
                evidence=(span,),
                stages=(stage,),
            )
        verdicts.append(v)
    return " ".join(parts), claims, verdicts


def timed(fn: Callable[[], Any], repeats: int) -> list[float]:
    """Milliseconds per call, one sample per repeat."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def summary(samples: list[float]) -> dict[str, float]:
    """Median and p95 (nearest rank) in ms."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"median_ms": round(statistics.median(ordered), 4), "p95_ms": round(p95, 4)}


def run(repeats: int, data: Path, per_type: int, model_dir: Path | None = None) -> dict[str, Any]:
    key = Ed25519PrivateKey.generate()
    trusted = [key.public_key()]
    settings = Settings(home=Path(tempfile.mkdtemp()))
    models = [{"name": "affidavit-verifier-minilm", "sha256": "0" * 64}]
    rows = []
    tmp = Path(tempfile.mkdtemp())
    for n in SIZES:
        answer, claims, verdicts = make_case(n)

        def build(
            answer: str = answer, claims: list[Claim] = claims, verdicts: list[Verdict] = verdicts
        ) -> Any:
            return build_certificate(
                "What did the plants produce?", answer, claims, verdicts, None, settings, models
            )

        cert = build()
        signed = sign_certificate(cert, key)
        path = tmp / f"cert-{n}.json"
        write_certificate(signed, path)
        check = verify_certificate(path, trusted)
        assert check.valid, check.reasons  # the benchmark measures a certificate that verifies
        canonical = canonical_bytes(signed_payload(signed))

        def seal(c: Any = cert) -> str:
            # CertiRAG-style: sha256 over the JSON, no key; anyone can recompute it after an edit
            return hashlib.sha256(
                json.dumps(c.model_dump(mode="json"), sort_keys=True).encode()
            ).hexdigest()

        def seal_check(p: Path = path) -> bool:
            tree = json.loads(p.read_text())
            return bool(hashlib.sha256(json.dumps(tree, sort_keys=True).encode()).hexdigest())

        row = {
            "claims": n,
            "bytes_file": path.stat().st_size,
            "bytes_canonical": len(canonical),
            "build": summary(timed(build, repeats)),
            "sign": summary(timed(lambda c=cert: sign_certificate(c, key), repeats)),
            "verify_file": summary(timed(lambda p=path: verify_certificate(p, trusted), repeats)),
            "baseline_seal": summary(timed(seal, repeats)),
            "baseline_seal_check_file": summary(timed(seal_check, repeats)),
            "decisions": {
                d: sum(1 for r in signed.claims if r.decision == d)
                for d in ("verified", "unverified", "blocked")
            },
        }
        rows.append(row)
    tamper = tamper_detection(200)
    perturbations = (
        perturbation_policy(data, per_type, seed=13, model_dir=model_dir)
        if per_type > 0
        else {"status": "skipped", "note": "--per-type 0"}
    )
    return {
        "benchmark": "certificates",
        "tamper_detection": tamper,
        "library_version": affidavit.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "repeats": repeats,
        "rows": rows,
        "perturbation_suite": perturbations,
    }


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, (*path, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaves(v, (*path, i))]
    return [path]


def tamper_detection(edits: int, seed: int = 7) -> dict[str, Any]:
    """Edit one random field of a signed 10-claim certificate, recomputing every hash an editor
    can (evidence sha256 when the text changed, the unkeyed seal); count how often each scheme
    notices."""
    rnd = random.Random(seed)
    key = Ed25519PrivateKey.generate()
    answer, claims, verdicts = make_case(10)
    cert = build_certificate("q", answer, claims, verdicts, None, Settings(), [])
    tree0 = sign_certificate(cert, key).model_dump(mode="json")
    paths = [p for p in _leaves(tree0) if p[0] != "signature"]
    ours = baseline = 0
    for _ in range(edits):
        tree = json.loads(json.dumps(tree0))
        path = rnd.choice(paths)
        node: Any = tree
        for part in path[:-1]:
            node = node[part]
        old = node[path[-1]]
        if isinstance(old, bool):
            new: Any = not old
        elif isinstance(old, int | float):
            new = old + 1
        elif isinstance(old, str):
            new = old + "x"
        else:
            new = "x"
        node[path[-1]] = new
        if path[-1] == "text" and "sha256" in node:
            node["sha256"] = hashlib.sha256(new.encode()).hexdigest()
        sealed = dict(tree)
        sealed.pop("signature", None)
        # the seal is recomputed by the editor, so the seal check always passes
        seal = hashlib.sha256(json.dumps(sealed, sort_keys=True).encode()).hexdigest()
        baseline += int(
            seal != hashlib.sha256(json.dumps(sealed, sort_keys=True).encode()).hexdigest()
        )
        ours += int(not verify_certificate(tree, [key.public_key()]).valid)
    return {"edits": edits, "detected_signed": ours, "detected_unkeyed_seal": baseline}


def _load_suite() -> Any:
    """The audit stage's perturbation suite module (benchmarks/audit_perturbations.py), or None."""
    path = ROOT / "benchmarks" / "audit_perturbations.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("audit_perturbations", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules["audit_perturbations"] = module  # its dataclasses look themselves up here
    spec.loader.exec_module(module)
    for name in ("load_passages", "build_suite", "PERTURBATIONS"):
        if not hasattr(module, name):
            return None
    return module


def resolve_tau(policy: Any) -> tuple[float, float]:
    """(tau_entail, tau_contradict) the policy applies."""
    from affidavit.policy import resolve_policy

    p = resolve_policy(policy)
    return p.tau_entail, p.tau_contradict


def perturbation_policy(
    data: Path, per_type: int, seed: int, model_dir: Path | None = None
) -> dict[str, Any]:
    """Strict-mode rendering on the audit perturbation suite (test half).

    Per item: claims from the real extractor, each verified against the item's 5 chunks by the
    claim cascade, decided under a preset, rendered in strict mode. A perturbed answer must
    never have a sentence shown; grounded answers and faithful paraphrases measure how much
    the policy still shows (the cost of being strict).
    """
    from affidavit.claims.extractor import extract_claims
    from affidavit.core.settings import PolicySettings, VerifySettings
    from affidavit.core.types import Chunk
    from affidavit.policy import decide_all, render
    from affidavit.verify.cascade import ClaimCascade

    suite = _load_suite()
    if suite is None:
        return {"status": "missing", "note": "benchmarks/audit_perturbations.py not available"}
    passages = suite.load_passages(data)
    items = [it for it in suite.build_suite(passages, per_type, seed) if it.half == "test"]
    perturbed = set(suite.PERTURBATIONS)
    configs = {
        # the default cascade: the trained cross-encoder decides; where it is missing every claim
        # records the error and stays unverified (fail closed), which this run shows as such
        "default_cascade": ["checks", "cross_encoder"],
        # the weakest verifier that runs everywhere: typed checks + lexical coverage
        "checks_only": ["checks"],
    }
    out: dict[str, Any] = {
        "status": "measured",
        "suite": "benchmarks/audit_perturbations.py build_suite (test half)",
        "per_type": per_type,
        "seed": seed,
        "n_items": len(items),
        "configs": {},
    }
    for cfg_name, cascade_stages in configs.items():
        for preset in ("default", "strict"):
            policy = PolicySettings(preset=preset)
            cascade = ClaimCascade(
                VerifySettings(cascade=cascade_stages, threads=1, model_path=model_dir), policy
            )
            by_kind: dict[str, dict[str, int]] = {}
            leaks: list[dict[str, str]] = []
            t0 = time.perf_counter()
            for it in items:
                claims = extract_claims(it.answer)
                chunks = [Chunk(text=c["text"], url=c.get("url")) for c in it.chunks]
                verdicts = [cascade.verify(c, chunks) for c in claims]
                decisions = decide_all(claims, verdicts, policy)
                rendered = render(it.answer, claims, decisions, "strict")
                shown = any(sent.shown for sent in rendered.sentences)
                row = by_kind.setdefault(it.kind, {"n": 0, "shown": 0, "verified_claims": 0})
                row["n"] += 1
                row["shown"] += int(shown)
                row["verified_claims"] += sum(1 for d in decisions if d.decision == "verified")
                if shown and it.kind in perturbed:
                    leaks.append({"kind": it.kind, "answer": it.answer, "base": it.base})
            tau_e, tau_c = resolve_tau(policy)
            out["configs"][f"{cfg_name}/{preset}"] = {
                "cascade": cascade_stages,
                "stage_errors": dict(cascade.stage_errors),
                "tau_entail": tau_e,
                "tau_contradict": tau_c,
                "by_kind": by_kind,
                "perturbed_shown": sum(r["shown"] for k, r in by_kind.items() if k in perturbed),
                "perturbed_total": sum(r["n"] for k, r in by_kind.items() if k in perturbed),
                "leaks_sample": leaks[:20],
                "seconds": round(time.perf_counter() - t0, 2),
            }
    return out


def print_perturbations(result: dict[str, Any]) -> None:
    pert = result["perturbation_suite"]
    if pert.get("status") != "measured":
        print(f"perturbation suite: {pert.get('status')} ({pert.get('note', '')})")
        return
    print(f"\nstrict-mode rendering on the audit perturbation suite ({pert['n_items']} test items)")
    kinds = list(next(iter(pert["configs"].values()))["by_kind"])
    print(f"{'config':<26}" + "".join(f"{k[:11]:>12}" for k in kinds) + f"{'leaks':>7}")
    for name, cfg in pert["configs"].items():
        cells = "".join(
            f"{cfg['by_kind'][k]['shown']:>6}/{cfg['by_kind'][k]['n']:<5}" for k in kinds
        )
        print(f"{name:<26}{cells}{cfg['perturbed_shown']:>7}")
    print("cells: answers with a sentence shown in strict mode / answers of that type")


def print_table(result: dict[str, Any]) -> None:
    head = (
        f"{'claims':>6} {'file B':>8} {'canon B':>8} {'build ms':>9} {'sign ms':>15} "
        f"{'verify ms':>15} {'seal ms (base)':>15} {'seal chk ms':>12}"
    )
    print(head)
    print("-" * len(head))
    for r in result["rows"]:
        print(
            f"{r['claims']:>6} {r['bytes_file']:>8} {r['bytes_canonical']:>8} "
            f"{r['build']['median_ms']:>9.3f} "
            f"{r['sign']['median_ms']:>6.3f} (p95 {r['sign']['p95_ms']:.3f}) "
            f"{r['verify_file']['median_ms']:>6.3f} (p95 {r['verify_file']['p95_ms']:.3f}) "
            f"{r['baseline_seal']['median_ms']:>15.3f} "
            f"{r['baseline_seal_check_file']['median_ms']:>12.3f}"
        )
    print("medians over", result["repeats"], "runs; sign/verify p95 in brackets")
    t = result["tamper_detection"]
    print(
        f"random single-field edits (hashes recomputed): signed certificate detects "
        f"{t['detected_signed']}/{t['edits']}, unkeyed seal detects "
        f"{t['detected_unkeyed_seal']}/{t['edits']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument(
        "--per-type", type=int, default=100, help="perturbation suite items per type (0: skip)"
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "certificates.json"
    )
    parser.add_argument(
        "--model-dir", type=Path, default=None, help="verifier model folder (default: packaged)"
    )
    args = parser.parse_args()
    result = run(args.repeats, args.data, args.per_type, args.model_dir)
    result["command"] = "python benchmarks/certificates.py " + " ".join(sys.argv[1:])
    print_table(result)
    print_perturbations(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
