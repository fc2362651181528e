/* test_hip_layout_r0600.c : the hipDeviceProp_tR0600 offsets runtime/src/vendor_hip.c reads
 * (sizeof 1472, gcnArchName at 1160) and the attribute number it asks for, against the header
 * of a ROCm 6 or 7 HIP (check-rocm compiles it with ROCm 7.2's libamdhip64-dev). */
#include <hip/hip_runtime_api.h>
#include <stddef.h>
#include <stdio.h>

int main(void)
{
    int failed = 0;
#define CHECK(cond, what) do { int ok_ = (cond); printf("%-4s %s\n", ok_ ? "ok" : "FAIL", what); failed += !ok_; } while (0)
    printf("HIP %d.%d.%d headers\n", HIP_VERSION_MAJOR, HIP_VERSION_MINOR, HIP_VERSION_PATCH);
    CHECK(sizeof(hipDeviceProp_tR0600) == 1472, "sizeof(hipDeviceProp_tR0600) == 1472");
    CHECK(offsetof(hipDeviceProp_tR0600, gcnArchName) == 1160, "hipDeviceProp_tR0600.gcnArchName at offset 1160");
    CHECK(sizeof(((hipDeviceProp_tR0600 *)0)->gcnArchName) == 256, "gcnArchName holds 256 bytes");
    CHECK(sizeof(hipDeviceProp_tR0600) <= 4096, "hipDeviceProp_tR0600 fits the runtime's 4096-byte buffer");
    CHECK(hipDeviceAttributeMultiprocessorCount == 63, "hipDeviceAttributeMultiprocessorCount == 63");
    printf("%d passed, %d failed\n", 5 - failed, failed);
    return failed != 0;
}
