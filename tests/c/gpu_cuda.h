/* The few CUDA driver API calls sluice's GPU tests and benchmarks make, loaded with dlopen so
 * that the programs build without a CUDA toolkit and say SKIP on a machine without a driver. */
#ifndef SLUICE_TEST_GPU_CUDA_H
#define SLUICE_TEST_GPU_CUDA_H
#include <dlfcn.h>
#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

static CUresult (*cu_Init)(unsigned);
static CUresult (*cu_DeviceGetCount)(int *);
static CUresult (*cu_DeviceGet)(CUdevice *, int);
static CUresult (*cu_DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cu_CtxSetCurrent)(CUcontext);
static CUresult (*cu_CtxSynchronize)(void);
static CUresult (*cu_MemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cu_MemFree)(CUdeviceptr);
static CUresult (*cu_MemHostAlloc)(void **, size_t, unsigned);
static CUresult (*cu_MemFreeHost)(void *);
static CUresult (*cu_MemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*cu_MemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*cu_MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
typedef void *CUmodule;
typedef void *CUfunction;
static CUresult (*cu_ModuleLoadData)(CUmodule *, const void *);
static CUresult (*cu_ModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cu_LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);

/* Loads the driver, initializes it and makes device (local_rank % devices) current. Returns
 * NULL on success, else why the GPU part cannot run. */
__attribute__((unused)) static const char *gpu_open(int local_rank) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) return "no CUDA driver (libcuda.so.1 not found)";
#define SLUICE_CU_SYM(var, name)                          \
    do {                                                  \
        *(void **)(&var) = dlsym(h, name);                \
        if (!var) return "CUDA driver lacks " name;       \
    } while (0)
    SLUICE_CU_SYM(cu_Init, "cuInit");
    SLUICE_CU_SYM(cu_DeviceGetCount, "cuDeviceGetCount");
    SLUICE_CU_SYM(cu_DeviceGet, "cuDeviceGet");
    SLUICE_CU_SYM(cu_DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SLUICE_CU_SYM(cu_CtxSetCurrent, "cuCtxSetCurrent");
    SLUICE_CU_SYM(cu_CtxSynchronize, "cuCtxSynchronize");
    SLUICE_CU_SYM(cu_MemAlloc, "cuMemAlloc_v2");
    SLUICE_CU_SYM(cu_MemFree, "cuMemFree_v2");
    SLUICE_CU_SYM(cu_MemHostAlloc, "cuMemHostAlloc");
    SLUICE_CU_SYM(cu_MemFreeHost, "cuMemFreeHost");
    SLUICE_CU_SYM(cu_MemcpyHtoD, "cuMemcpyHtoD_v2");
    SLUICE_CU_SYM(cu_MemcpyDtoH, "cuMemcpyDtoH_v2");
    SLUICE_CU_SYM(cu_MemcpyDtoD, "cuMemcpyDtoD_v2");
    SLUICE_CU_SYM(cu_ModuleLoadData, "cuModuleLoadData");
    SLUICE_CU_SYM(cu_ModuleGetFunction, "cuModuleGetFunction");
    SLUICE_CU_SYM(cu_LaunchKernel, "cuLaunchKernel");
#undef SLUICE_CU_SYM
    if (cu_Init(0) != 0) return "cuInit failed (no usable device)";
    int n = 0;
    if (cu_DeviceGetCount(&n) != 0 || n < 1) return "no CUDA device";
    CUdevice dev;
    CUcontext ctx;
    if (cu_DeviceGet(&dev, local_rank % n) != 0) return "cuDeviceGet failed";
    if (cu_DevicePrimaryCtxRetain(&ctx, dev) != 0) return "cuDevicePrimaryCtxRetain failed";
    if (cu_CtxSetCurrent(ctx) != 0) return "cuCtxSetCurrent failed";
    return NULL;
}
#endif
