"""Tutorial 09: persistent matmul over tensor descriptors: a grid of NUM_SMS programs walks the output tiles
(tile_id, tile_id + NUM_SMS, ...) in grouped order; the K loop's descriptor loads are TMA copies on sm_90a.
fp16 (A [M, K], B [K, N]) and fp8 (float8e4nv A [M, K], B given K-major as [N, K], the layout fp8 wgmma reads;
the kernel multiplies by its transpose)."""
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def matmul_kernel_descriptor_persistent(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                                        BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                                        GROUP_SIZE_M: tl.constexpr, B_KMAJOR: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            if B_KMAJOR:
                b = b_desc.load([offs_bn, offs_k])
                accumulator = tl.dot(a, b.T, accumulator)
            else:
                b = b_desc.load([offs_k, offs_bn])
                accumulator = tl.dot(a, b, accumulator)
        c = accumulator.to(c_desc.dtype)
        c_desc.store([offs_am, offs_bn], c)


def matmul_persistent(a, b, c, num_sms, b_kmajor=False, BM=128, BN=128, BK=64, GROUP_SIZE_M=8, num_warps=8,
                      num_stages=3):
    """a [M, K]; b [K, N] (or [N, K] with b_kmajor); c [M, N] (float16)."""
    M, K = a.shape
    N = b.shape[0] if b_kmajor else b.shape[1]
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(b, [BN, BK] if b_kmajor else [BK, BN])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN])
    grid = (min(num_sms, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    matmul_kernel_descriptor_persistent[grid](a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN,
                                              BLOCK_SIZE_K=BK, GROUP_SIZE_M=GROUP_SIZE_M, B_KMAJOR=b_kmajor,
                                              NUM_SMS=grid[0], num_warps=num_warps, num_stages=num_stages)
    return c
