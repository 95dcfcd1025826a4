import cProfile, pstats, sys, time, torch
import custom_ops
from custom_ops import vtensor
B,H,D,L=16,8,128,32768
dt=torch.bfloat16
new = torch.randn(B,1,H,D,device="cuda",dtype=dt)
live = torch.ops.custom.vtensor_append(vtensor.empty(B,H,D,capacity=L+8*1024,dtype=dt,device="cuda"), torch.randn(B,L,H,D,device="cuda",dtype=dt))
op = torch.ops.custom.vtensor_append
for i in range(8): live = op(live, new)
torch.cuda.synchronize()
def run(n):
    global live
    for i in range(n): live = op(live, new)
t=time.perf_counter(); run(2048); torch.cuda.synchronize()
print(custom_ops.__file__, "host+sync per step %.1f us" % ((time.perf_counter()-t)/2048*1e6))
t=time.perf_counter(); run(2048); torch.cuda.synchronize()
print(custom_ops.__file__, "host+sync per step %.1f us" % ((time.perf_counter()-t)/2048*1e6))
pr=cProfile.Profile(); pr.enable(); run(2048); torch.cuda.synchronize(); pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(12)
