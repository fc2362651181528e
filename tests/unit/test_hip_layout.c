/* test_hip_layout.c : the offsets runtime/src/vendor_hip.c reads from hipDeviceProp_t match the
 * HIP headers installed here (Debian's libamdhip64-dev, ROCm 5.2: the legacy layout), and the
 * attribute numbers it passes to hipDeviceGetAttribute match the header's enum. */
#include <hip/hip_runtime_api.h>
#include <stddef.h>
#include <stdio.h>

int main(void)
{
    int failed = 0;
#define CHECK(cond, what) do { int ok_ = (cond); printf("%-4s %s\n", ok_ ? "ok" : "FAIL", what); failed += !ok_; } while (0)
    CHECK(offsetof(hipDeviceProp_t, gcnArchName) == 396, "legacy hipDeviceProp_t.gcnArchName at offset 396");
    CHECK(sizeof(hipDeviceProp_t) <= 4096, "hipDeviceProp_t fits the 4096-byte buffer");
    CHECK(hipDeviceAttributeMultiprocessorCount == 63, "hipDeviceAttributeMultiprocessorCount == 63");
    printf("%d passed, %d failed\n", 3 - failed, failed);
    return failed != 0;
}
