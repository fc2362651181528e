/* hipstub.c : a stand-in for TileLang's libhip_stub.so: exports hip* names that count their
 * calls. A library that binds to it instead of the real libamdhip64 is caught by the counter
 * (hipstub_calls). Its device properties say gfx1201, a target no bundle here has. */
#include <string.h>

int hipstub_calls;

#define STUB(name) int name(void) { hipstub_calls++; return 0; }
STUB(hipSetDevice) STUB(hipModuleLoad) STUB(hipModuleUnload) STUB(hipLaunchKernel)
STUB(hipMalloc) STUB(hipFree) STUB(hipMemcpy) STUB(hipMemcpyAsync) STUB(hipMemset)
STUB(hipMemsetAsync) STUB(hipStreamCreate) STUB(hipStreamDestroy) STUB(hipStreamSynchronize)
STUB(hipDeviceSynchronize) STUB(hipGetLastError) STUB(hipPeekAtLastError) STUB(hipEventCreate)
STUB(hipEventRecord) STUB(hipEventSynchronize) STUB(hipEventElapsedTime) STUB(hipEventDestroy)
STUB(hipDriverGetVersion) STUB(hipRuntimeGetVersion) STUB(hipCtxGetCurrent) STUB(hipGetErrorName)
STUB(hipModuleGetFunction) STUB(hipModuleLaunchKernel) STUB(hipModuleLoadData)

int hipInit(unsigned flags) { (void)flags; hipstub_calls++; return 0; }
int hipGetDeviceCount(int *n) { hipstub_calls++; *n = 1; return 0; }
int hipGetDevice(int *d) { hipstub_calls++; *d = 0; return 0; }
int hipDeviceGetAttribute(int *v, int attr, int dev) { (void)attr, (void)dev; hipstub_calls++; *v = 1; return 0; }
const char *hipGetErrorString(int e) { (void)e; hipstub_calls++; return "stub"; }

/* Fills whatever layout it is given with an arch name at both known offsets. */
static int props(void *p) { hipstub_calls++; memset(p, 0, 1472); strcpy((char *)p + 396, "gfx1201"); strcpy((char *)p + 1160, "gfx1201"); return 0; }
int hipGetDevicePropertiesR0600(void *p, int dev) { (void)dev; return props(p); }
int hipGetDeviceProperties(void *p, int dev) { (void)dev; return props(p); }
