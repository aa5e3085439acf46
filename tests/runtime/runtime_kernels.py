"""Hand-written PTX kernels for the runtime tests (no compiler involved, so runtime tests stand alone)."""

# add_one(const int *x, int *y, int n): y[i] = x[i] + 1 for i = blockIdx.x * blockDim.x + threadIdx.x < n.
ADD_ONE_PTX = r"""
.version 8.0
.target sm_90
.address_size 64

.visible .entry add_one(
    .param .u64 x_ptr,
    .param .u64 y_ptr,
    .param .u32 n
)
{
    .reg .pred  %p<2>;
    .reg .b32   %r<8>;
    .reg .b64   %rd<8>;

    ld.param.u64    %rd1, [x_ptr];
    ld.param.u64    %rd2, [y_ptr];
    ld.param.u32    %r1, [n];
    mov.u32         %r2, %ctaid.x;
    mov.u32         %r3, %ntid.x;
    mov.u32         %r4, %tid.x;
    mad.lo.s32      %r5, %r2, %r3, %r4;
    setp.ge.s32     %p1, %r5, %r1;
    @%p1 bra        DONE;
    cvta.to.global.u64  %rd3, %rd1;
    cvta.to.global.u64  %rd4, %rd2;
    mul.wide.s32    %rd5, %r5, 4;
    add.s64         %rd6, %rd3, %rd5;
    add.s64         %rd7, %rd4, %rd5;
    ld.global.u32   %r6, [%rd6];
    add.s32         %r7, %r6, 1;
    st.global.u32   [%rd7], %r7;
DONE:
    ret;
}
"""

# params4(ptr a, ptr b, int32 n, float32 alpha): does nothing; exists to measure launch overhead of a
# 4-argument kernel and (under the fake driver) to check what the launcher packed.
PARAMS4_PTX = r"""
.version 8.0
.target sm_90
.address_size 64

.visible .entry params4(
    .param .u64 a,
    .param .u64 b,
    .param .u32 n,
    .param .f32 alpha
)
{
    ret;
}
"""
