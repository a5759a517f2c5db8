"""Profile one training step of the text encoder + UNet (random latents/tokens) on the GPU:
prints the CUDA ops that take the time, for choosing speed-ups.

usage: python3 profile_unet.py CKPT_DIR [BATCH]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    import torch
    import model as M
    ck = sys.argv[1]
    B = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    meta, parts = M.load_ckpt(ck)
    _, text, unet = M.build(meta["configs"])
    text.load_state_dict(parts["text_ema"], strict=False)
    unet.load_state_dict(parts["unet_ema"])
    text.cuda().train()
    unet.cuda().train()
    torch.backends.cudnn.benchmark = True
    V = meta["configs"]["text"]["vocab_size"]

    def step():
        z = torch.randn(B, 4, 32, 32, device="cuda")
        ids = torch.randint(0, V, (B, 77), device="cuda")
        t = torch.randint(0, 1000, (B,), device="cuda")
        with torch.autocast("cuda", torch.bfloat16):
            out = unet(z, t, text(ids).last_hidden_state).sample
        out.float().pow(2).mean().backward()

    for _ in range(4):
        step()
    torch.cuda.synchronize()
    t0 = time.time()
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    print(f"fwd+bwd batch {B}: {(time.time() - t0) / 5:.4f} s/step")
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=70))


if __name__ == "__main__":
    main()
