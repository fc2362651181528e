/* custub.c : cu* names that count their calls and fail, for the GPU interposition check
 * (bench/interpose_cuda.py): loaded RTLD_GLOBAL before libaiter_aot.so, it must never be
 * reached unless AITER_AOT_GLOBAL_SYMBOLS=1. */
int custub_calls;
#define STUB(name) int name(void) { custub_calls++; return 999; }
STUB(cuInit) STUB(cuDeviceGetCount) STUB(cuDeviceGet) STUB(cuDeviceGetAttribute)
STUB(cuCtxGetCurrent) STUB(cuCtxSetCurrent) STUB(cuCtxGetDevice) STUB(cuDevicePrimaryCtxRetain)
STUB(cuCtxPushCurrent_v2) STUB(cuCtxPopCurrent_v2) STUB(cuModuleLoadData) STUB(cuModuleGetFunction)
STUB(cuLaunchKernel) STUB(cuFuncSetAttribute) STUB(cuGetErrorString) STUB(cuMemAlloc_v2) STUB(cuMemFree_v2)
STUB(cuMemcpyHtoD_v2) STUB(cuMemcpyDtoH_v2) STUB(cuStreamSynchronize) STUB(cuCtxSynchronize)
STUB(cuModuleUnload) STUB(cuDeviceGetName) STUB(cuDriverGetVersion) STUB(cuCtxCreate_v2)
STUB(cuEventCreate) STUB(cuEventRecord) STUB(cuEventSynchronize) STUB(cuEventElapsedTime)
STUB(cuStreamCreate) STUB(cuStreamDestroy_v2)
