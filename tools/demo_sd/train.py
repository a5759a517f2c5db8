"""Train the demo model in time-bounded chunks that resume from a checkpoint directory.

  stage vae : AutoencoderKL on rendered scenes, L1 + MSE reconstruction + small KL;
              at the end the latent scaling factor (1/std) is measured and stored.
  stage unet: CLIPTextModel + UNet2DConditionModel on the diffusion loss (epsilon
              prediction, SD's scaled-linear betas 0.00085..0.012, 1000 steps,
              min-SNR-5 weighting), 10% captions dropped to "" for CFG, EMA of
              text encoder and UNet weights; VAE frozen.

Checkpoint directory CK (see model.save_ckpt): fp16 shards of vae, text_ema,
unet_ema (raw weights are not kept there), meta.json, losses.csv.
Full state (fp32 raw + EMA + Adam) goes to CK/state.pt when --keep_state: a
later command on the same machine resumes exactly; otherwise resuming starts
raw = EMA weights and a fresh AdamW with warmup.

usage: python3 train.py --stage vae|unet --ck DIR --deadline EPOCH_S [options]
"""
import argparse
import csv
import json
import math
import os
import sys
import time

T0 = time.time()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import data  # noqa: E402
import model as M  # noqa: E402


def log(*a):
    print(f"[{time.time() - T0:7.1f}s]", *a, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", required=True, choices=["vae", "unet"])
    ap.add_argument("--ck", required=True)
    ap.add_argument("--deadline", type=float, default=0, help="epoch seconds; stop with reserve left")
    ap.add_argument("--reserve", type=float, default=40)
    ap.add_argument("--max_steps", type=int, default=10 ** 9)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--pool", type=int, default=300000, help="scene descriptions made this command")
    ap.add_argument("--latent_pool", type=int, default=32768)
    ap.add_argument("--fresh_frac", type=float, default=0.1)
    ap.add_argument("--fill_every", type=int, default=4, help="refresh latents every k steps (k x fresh)")
    ap.add_argument("--cfg_drop", type=float, default=0.1)
    ap.add_argument("--ema", type=float, default=0.999)
    ap.add_argument("--kl", type=float, default=1e-6)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--keep_state", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tok", default=os.path.join(HERE, "tokenizer"))
    ap.add_argument("--log_every", type=int, default=50)
    ap.add_argument("--sheet", default="", help="write a small contact sheet PNG here at the end")
    args = ap.parse_args()
    deadline = args.deadline or (T0 + 10 ** 9)
    os.makedirs(args.ck, exist_ok=True)

    meta = None
    if os.path.exists(os.path.join(args.ck, "meta.json")):
        with open(os.path.join(args.ck, "meta.json")) as f:
            meta = json.load(f)
    done = (meta or {}).get("steps", {}).get(args.stage, 0)
    # scene pool first (CPU workers fork before CUDA exists)
    t = time.time()
    pool = data.make_pool(args.seed * 7919 + done + (0 if args.stage == "vae" else 1),
                          args.pool, args.tok if args.stage == "unet" else None)
    log(f"pool of {args.pool} scenes in {time.time() - t:.1f}s")

    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed + done)
    P = data.pool_to_device(pool, dev)
    N = P["types"].shape[0]

    if meta is None:
        tok = data.tokenizer(args.tok)
        meta = dict(configs=M.default_configs(len(tok), tok.bos_token_id, tok.eos_token_id),
                    steps={}, gpu_s={}, commands=[])
        parts = {}
    else:
        _, parts = M.load_ckpt(args.ck)
    vae, text, unet = M.build(meta["configs"])
    if "vae" in parts:
        vae.load_state_dict(parts["vae"])
    if "text_ema" in parts:
        text.load_state_dict(parts["text_ema"], strict=False)
    if "unet_ema" in parts:
        unet.load_state_dict(parts["unet_ema"])
    counts = M.param_counts(vae, text, unet)
    meta["param_counts"] = counts
    log("params", counts)
    vae.to(dev).to(memory_format=torch.channels_last)
    text.to(dev)
    unet.to(dev).to(memory_format=torch.channels_last)

    if args.stage == "vae":
        train_params = list(vae.parameters())
        ema_params = []
    else:
        vae.requires_grad_(False).eval()
        train_params = list(text.parameters()) + list(unet.parameters())
        ema_params = [p.detach().clone() for p in train_params]
    opt = torch.optim.AdamW(train_params, lr=args.lr, betas=(0.9, 0.99), weight_decay=0.01)
    state_path = os.path.join(args.ck, "state.pt")
    step = 0
    warm_skip = 0
    if os.path.exists(state_path):
        st = torch.load(state_path, map_location=dev, weights_only=False)
        if st["stage"] == args.stage and st["done"] == done:
            for p, v in zip(train_params, st["params"]):
                p.data.copy_(v)
            for e, v in zip(ema_params, st["ema"]):
                e.copy_(v)
            opt.load_state_dict(st["opt"])
            warm_skip = 10 ** 9
            log("resumed full state (params, EMA, AdamW): no warmup")
        del st

    def lr_at(s):
        return args.lr * min(1.0, (s + warm_skip + 1) / args.warmup)

    step_fn_vae = vae
    unet_fn = torch.compile(unet) if args.compile else unet
    text_fn = text

    rows = []
    t_loop = time.time()
    B = args.batch
    if args.stage == "unet":
        from diffusers import DDPMScheduler
        sched = M.scheduler(DDPMScheduler)
        ac = sched.alphas_cumprod.to(dev)
        sf = meta["configs"]["vae"]["scaling_factor"]
        LP = args.latent_pool
        lat = torch.empty(LP, 4, 32, 32, device=dev, dtype=torch.bfloat16)
        lat_scene = torch.zeros(LP, dtype=torch.long, device=dev)
        ptr = [0, int(torch.randint(N, (1,)))]
        empty = torch.tensor(data.tokenize(args.tok, [""])[0], device=dev, dtype=torch.long)

        @torch.no_grad()
        def fill(m):
            sidx = (torch.arange(m, device=dev) + ptr[1]) % N
            ptr[1] = (ptr[1] + m) % N
            x = data.render_idx(P, sidx).contiguous(memory_format=torch.channels_last)
            with torch.autocast("cuda", torch.bfloat16, enabled=dev == "cuda"):
                z = vae.encode(x).latent_dist.sample() * sf
            pos = (torch.arange(m, device=dev) + ptr[0]) % LP
            ptr[0] = (ptr[0] + m) % LP
            lat[pos] = z.to(torch.bfloat16)
            lat_scene[pos] = sidx

        for _ in range(0, LP, 512):
            fill(512)
        torch.cuda.synchronize()
        log(f"latent pool filled ({LP})")
        m_fresh = max(1, int(B * args.fresh_frac))

    fmt = torch.channels_last
    if args.stage == "unet" and dev == "cuda":   # pick the faster memory format, time the data refresh
        def fwd_bwd():
            bi = torch.randint(LP, (B,), device=dev)
            z = lat[bi].float().contiguous(memory_format=fmt)
            ids = P["ids"][lat_scene[bi], 0].long()
            tt = torch.randint(0, 1000, (B,), device=dev)
            with torch.autocast("cuda", torch.bfloat16):
                pred = unet(z, tt, text(ids).last_hidden_state).sample
            pred.float().pow(2).mean().backward()
        tm = {}
        for fmt in (torch.channels_last, torch.contiguous_format):
            unet.to(memory_format=fmt)
            for i in range(8):
                if i == 3:
                    torch.cuda.synchronize()
                    t = time.time()
                fwd_bwd()
            torch.cuda.synchronize()
            tm[fmt] = (time.time() - t) / 5
        opt.zero_grad(set_to_none=True)
        t = time.time()
        for _ in range(5):
            fill(m_fresh)
        torch.cuda.synchronize()
        fmt = min(tm, key=tm.get)
        unet.to(memory_format=fmt)
        log(f"fwd+bwd s/step: {({str(k): round(v, 4) for k, v in tm.items()})}; "
            f"refresh of {m_fresh} latents {(time.time() - t) / 5:.4f}s; using {fmt}")
    ema_decay = args.ema
    t_steps = time.time()
    losses = []
    while step < args.max_steps and time.time() < deadline - args.reserve:
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        if args.stage == "vae":
            idx = torch.randint(N, (B,), device=dev)
            x = data.render_idx(P, idx).contiguous(memory_format=torch.channels_last)
            with torch.autocast("cuda", torch.bfloat16, enabled=dev == "cuda"):
                post = step_fn_vae.encode(x).latent_dist
                z = post.sample()
                rec = step_fn_vae.decode(z).sample
            rec = rec.float()
            l1 = (rec - x).abs().mean()
            l2 = F.mse_loss(rec, x)
            kl = post.kl().mean()
            loss = l1 + l2 + args.kl * kl
            parts_log = (l1.detach(), l2.detach(), kl.detach())
        else:
            if step % args.fill_every == 0:
                fill(m_fresh * args.fill_every)
            bi = torch.randint(LP, (B,), device=dev)
            z0 = lat[bi].float()
            sc = lat_scene[bi]
            k = torch.randint(P["ids"].shape[1], (B,), device=dev)
            ids = P["ids"][sc, k].long()
            drop = torch.rand(B, device=dev) < args.cfg_drop
            ids = torch.where(drop[:, None], empty[None, :], ids)
            tt = torch.randint(0, 1000, (B,), device=dev)
            noise = torch.randn_like(z0)
            a = ac[tt].view(B, 1, 1, 1)
            zt = (a.sqrt() * z0 + (1 - a).sqrt() * noise).contiguous(memory_format=fmt)
            with torch.autocast("cuda", torch.bfloat16, enabled=dev == "cuda"):
                enc = text_fn(ids).last_hidden_state
                pred = unet_fn(zt, tt, enc).sample
            snr = ac[tt] / (1 - ac[tt])
            w = torch.clamp(snr, max=5.0) / snr
            per = ((pred.float() - noise) ** 2).mean(dim=(1, 2, 3))
            loss = (w * per).mean()
            parts_log = (per.mean().detach(),)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(train_params, 1.0)
        opt.step()
        if ema_params:
            d = min(ema_decay, (1 + done + step) / (10 + done + step))
            torch._foreach_lerp_(ema_params, [p.detach() for p in train_params], 1 - d)
        losses.append(torch.stack([loss.detach(), *parts_log, gn.detach()]))
        step += 1
        if step % args.log_every == 0:
            v = torch.stack(losses).mean(0).tolist()
            losses = []
            el = time.time() - t_steps
            rows.append([args.stage, done + step, round(el, 1), *[f"{x:.6g}" for x in v], f"{lr_at(step):.3g}"])
            if step % (args.log_every * 4) == 0:
                log(f"{args.stage} step {done + step} loss {v[0]:.5f} parts {[round(x, 5) for x in v[1:]]} "
                    f"{step / el:.2f} it/s")
    if dev == "cuda":
        torch.cuda.synchronize()
    el = time.time() - t_steps
    log(f"{step} steps this command in {el:.1f}s ({step / max(el, 1e-9):.2f} it/s)")

    # ---- save
    if args.stage == "vae":
        vae.eval()
        with torch.no_grad(), torch.autocast("cuda", torch.bfloat16, enabled=dev == "cuda"):
            zs = []
            for _ in range(8):
                idx = torch.randint(N, (64,), device=dev)
                zs.append(vae.encode(data.render_idx(P, idx).contiguous(memory_format=torch.channels_last))
                          .latent_dist.sample().float())
            zs = torch.cat(zs)
        sf = float(1.0 / zs.std())
        meta["configs"]["vae"]["scaling_factor"] = sf
        vae.register_to_config(scaling_factor=sf)
        log(f"latent mean {zs.mean():.4f} std {zs.std():.4f} -> scaling_factor {sf:.5f}")
        with torch.no_grad(), torch.autocast("cuda", torch.bfloat16, enabled=dev == "cuda"):
            x = data.render_idx(P, torch.arange(8, device=dev)).contiguous(memory_format=torch.channels_last)
            rec = vae.decode(vae.encode(x).latent_dist.mode()).sample.float().clamp(-1, 1)
        import numpy as np
        from PIL import Image
        g = torch.cat([torch.cat(list(x.float()), 2), torch.cat(list(rec), 2)], 1)
        Image.fromarray(((g.permute(1, 2, 0).cpu().numpy() + 1) * 127.5 + 0.5).astype(np.uint8)).save(
            os.path.join(args.ck, "vae_recon.png"))
        out_parts = {"vae": vae.state_dict()}
        if "text_ema" in parts:
            out_parts["text_ema"] = parts["text_ema"]
            out_parts["unet_ema"] = parts["unet_ema"]
    else:
        with torch.no_grad():
            for p, e in zip(train_params, ema_params):
                p_data = p.data.clone()
                p.data.copy_(e)
                e.copy_(p_data)      # models now hold EMA; ema_params hold raw
        out_parts = {"vae": vae.state_dict(), "text_ema": text.state_dict(), "unet_ema": unet.state_dict()}
    meta["steps"][args.stage] = done + step
    spent = time.time() - T0
    meta["gpu_s"][args.stage] = round(meta["gpu_s"].get(args.stage, 0) + spent, 1)
    meta["commands"].append(dict(stage=args.stage, steps=step, seconds=round(spent, 1), batch=B, lr=args.lr,
                                 it_s=round(step / max(el, 1e-9), 2)))
    M.save_ckpt(args.ck, out_parts, meta)
    new = not os.path.exists(os.path.join(args.ck, "losses.csv"))
    with open(os.path.join(args.ck, "losses.csv"), "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["stage", "step", "seconds_this_command", "loss", "part1", "part2", "part3", "grad_norm",
                        "lr"])
        for r in rows:
            if len(r) < 9:   # unet rows have one part: pad so columns line up
                r = r[:4] + [r[4], "", ""] + r[5:]
            w.writerow(r)
    if args.keep_state:
        if args.stage == "unet":
            raw = [e.clone() for e in ema_params]        # after the swap above: raw weights
            ema = [p.detach().clone() for p in train_params]
        else:
            raw, ema = [p.detach().clone() for p in train_params], []
        torch.save(dict(stage=args.stage, done=done + step, params=raw, ema=ema,
                        opt=opt.state_dict()), state_path)
    log(f"saved {args.ck} (stage {args.stage} total steps {done + step})")
    if args.sheet and args.stage == "unet":
        import sample
        text.eval()
        unet.eval()
        pipe = sample.pipeline_from(vae, text, unet, args.tok, dev)
        sample.contact_sheet(pipe, sample.DEMO_CAPTIONS[:16], [0], args.sheet, steps=25, cfg=6.0)
        log(f"sheet {args.sheet}")
    log("done")


if __name__ == "__main__":
    main()
