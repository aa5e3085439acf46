"""compiler.resources: registers, spills, shared memory, blocks per SM and the ptxas release of a compiled kernel,
read from `ptxas -v` at compile time (no GPU needed), and the occupancy rule."""
import numpy as np
import pytest

import compiler
import compiler.language as tl
from compiler.codegen.ptx import find_ptxas
from compiler.resources import kernel_resources, occupancy, parse_ptxas_log

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed (nvidia-cuda-nvcc)")


@compiler.jit
def _add(X, Y, Z, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Z + offs, tl.load(X + offs, mask=m) + tl.load(Y + offs, mask=m), mask=m)


@compiler.jit
def _rowsum(X, Z, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Z + tl.program_id(0), tl.sum(tl.load(X + tl.program_id(0) * N + offs, mask=offs < N), axis=0))


def test_occupancy_rule_on_sm90():
    # threads: 2048 per SM; 128-thread blocks at few registers -> 16 blocks
    assert occupancy(26, 0, 128) == 16
    # registers: 116/thread -> 3840 per warp (256-register units) -> 17 warps -> 4 blocks of 4 warps
    assert occupancy(116, 0, 128) == 4
    assert occupancy(255, 0, 1024) == 0 < occupancy(64, 0, 1024) == 1  # 255 x 1024 exceeds the register file
    # warps are placed in the four 16384-register partitions: 40 regs -> 12 warps per partition, 48 per SM, so
    # 24 blocks of 2 warps (a register file taken as one pool would say 51 warps, 25 blocks)
    assert occupancy(40, 0, 64) == 24
    # shared memory: (100 KiB + 1 KiB reserved) per block -> 2 blocks in 228 KiB; above 227 KiB none fits
    assert occupancy(32, 100 * 1024, 128) == 2
    assert occupancy(32, 228 * 1024, 128) == 0
    # the block limit: 32 tiny blocks
    assert occupancy(16, 0, 32) == 32
    with pytest.raises(ValueError, match="no occupancy limits known for sm_75"):
        occupancy(32, 0, 128, "sm_75")


def test_parse_ptxas_log():
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
           "ptxas info    : Function properties for k\n    752 bytes stack frame, 1004 bytes spill stores, "
           "892 bytes spill loads\nptxas info    : Used 32 registers, used 0 barriers, 752 bytes cumulative stack "
           "size, 8192 bytes smem, 384 bytes cmem[0]\n")
    assert parse_ptxas_log(log) == {"regs": 32, "static_shared": 8192, "spill_stores": 1004, "spill_loads": 892,
                                    "local_bytes": 752}
    with pytest.raises(ValueError, match="no resource usage"):
        parse_ptxas_log("ptxas info: nothing")


@needs_ptxas
def test_kernel_resources_from_ptxas_and_spills_under_maxnreg():
    x = np.random.default_rng(0).random(4096).astype(np.float32)
    k = _add.warmup(x, x, x, 4096, BLOCK=1024, grid=(1,), target="sm_90", num_warps=4)
    r = kernel_resources(k)
    assert 8 <= r["regs"] <= 64 and r["spill_stores"] == r["spill_loads"] == 0 and r["local_bytes"] == 0
    assert r["blocks_per_sm"] == occupancy(r["regs"], r["shared_bytes"], 128) >= 8
    assert r["ptxas_version"] and r["ptxas_version"][0].isdigit()
    assert k.asm.cached("cubin")  # the -v run made the cubin: kept, not assembled again
    # the same kernel with 8 values per thread forced into 32 registers: ptxas spills, and says so
    big = _add.warmup(x, x, x, 4096, BLOCK=8192, grid=(1,), target="sm_90", num_warps=4, maxnreg=32)
    s = kernel_resources(big)
    assert s["regs"] <= 32 and s["spill_stores"] > 0 and s["spill_loads"] > 0 and s["local_bytes"] > 0
    free = kernel_resources(_add.warmup(x, x, x, 4096, BLOCK=8192, grid=(1,), target="sm_90", num_warps=4))
    assert free["regs"] > 32 and free["spill_stores"] == 0 and free["blocks_per_sm"] < s["blocks_per_sm"]


@needs_ptxas
def test_kernel_resources_count_the_launch_shared_memory():
    x = np.random.default_rng(1).random((8, 1024)).astype(np.float32)
    z = np.empty(8, np.float32)
    k = _rowsum.warmup(x, z, 1024, BLOCK=1024, grid=(8,), target="sm_90", num_warps=8)
    r = kernel_resources(k)
    dyn = int(k.metadata.get("shared_bytes", 0))
    assert r["shared_bytes"] >= dyn and r["blocks_per_sm"] == occupancy(r["regs"], r["shared_bytes"], 256)


def _matmul(nw=8, stages=3):
    from workloads.matmul import kernel as MK

    a = np.zeros((256, 256), np.float16)
    bias = np.zeros(1, np.float32)
    return MK.matmul_kernel.warmup(a, a, a, bias, 256, 256, 256, 256, 1, 256, 1, 256, 1, grid=(1,), target="sm_90",
                                   BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, EPILOGUE="none",
                                   PRECISION="ieee", num_warps=nw, num_stages=stages)


@needs_ptxas
def test_matmul_resources_count_its_shared_memory_ring():
    k = _matmul()
    r = kernel_resources(k)
    assert r["shared_bytes"] >= int(k.metadata["shared_bytes"]) >= 64 * 1024  # 3 stages of 128x64 + 64x128 fp16
    assert 1 <= r["blocks_per_sm"] <= 233472 // (r["shared_bytes"] + 1024)


@pytest.mark.gpu
def test_resources_agree_with_the_driver():
    """On the GPU: our registers, local bytes and blocks per SM against cuFuncGetAttribute and the driver's
    occupancy calculator (cuOccupancyMaxActiveBlocksPerMultiprocessor) for the loaded cubins."""
    from compiler.runtime.cuda import driver

    d = driver()
    x = np.random.default_rng(2).random(4096).astype(np.float32)
    kernels = [_add.warmup(x, x, x, 4096, BLOCK=b, grid=(1,), target="sm_90", num_warps=w, maxnreg=m)
               for b, w, m in ((256, 1, None), (1024, 4, None), (8192, 4, None), (8192, 4, 32), (4096, 8, None))]
    kernels += [_matmul(8, 3), _matmul(4, 2)]
    for k in kernels:
        r = kernel_resources(k)
        fn = k.launcher.function
        attr = d.CUfunction_attribute
        regs = d.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_NUM_REGS, fn)[1]
        local = d.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn)[1]
        err, blocks = d.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, k.num_warps * 32,
                                                                    int(k.metadata.get("shared_bytes", 0)))
        assert int(err) == 0
        assert (regs, local, blocks) == (r["regs"], r["local_bytes"], r["blocks_per_sm"]), (k, r)
