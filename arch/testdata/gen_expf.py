# Writes expf-torch.bin: 1000 float32 x (first the ones whose torch.exp is not the correctly rounded exp, then
# 1000 whose is) and torch.exp(x), as little-endian uint32 bit pairs. Run from the repository root under torch
# 2.6.0 (Debian trixie python3-torch, CPU capability AVX512), as testdata/arch/README.md runs the fixtures.
import torch, numpy as np
g = torch.Generator().manual_seed(32)
x = torch.cat([torch.randn(200000, generator=g)*3, torch.rand(50000, generator=g)*210-105])
t = torch.exp(x).numpy()
cr = np.exp(x.double().numpy()).astype(np.float32)
off = np.nonzero(t != cr)[0][:1000]
same = np.nonzero(t == cr)[0][:1000]
idx = np.concatenate([off, same])
xs = x.numpy()[idx]; ts = t[idx]
np.stack([xs.view(np.uint32), ts.view(np.uint32)]).T.astype("<u4").tofile("arch/testdata/expf-torch.bin")
print(len(off), len(same), torch.__version__)
