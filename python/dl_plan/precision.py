"""The plan's precision as code: an autocast region and a GradScaler.

    fp16  autocast(float16) and a GradScaler with PyTorch's defaults (scale 65536, growth 2.0,
          backoff 0.5, interval 2000): fp16's narrow range needs the loss scaled
    bf16  autocast(bfloat16) and a disabled scaler: bf16 has fp32's range
    fp32  no autocast and a disabled scaler

A disabled GradScaler passes everything through (scale() returns the loss, step() steps, update()
does nothing), so one training step serves every precision:

    with plan.autocast():
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)      # clip the true gradients
    clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
"""

import contextlib


def dtype(plan):
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(plan.precision)


def autocast(plan):
    """torch.autocast on the plan's device type at its dtype; a null context for fp32."""
    import torch

    d = dtype(plan)
    if d is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda" if plan.is_cuda else "cpu", dtype=d)


def grad_scaler(plan, **options):
    """A GradScaler, enabled for fp16 only; `options` (init_scale, growth_interval, ...) pass on."""
    import torch

    enabled = plan.precision == "fp16" and plan.is_cuda
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):  # 2.3 and later; torch.cuda.amp's warns
        return amp.GradScaler("cuda", enabled=enabled, **options)
    return torch.cuda.amp.GradScaler(enabled=enabled, **options)
