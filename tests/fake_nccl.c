/* A stand-in for libnccl.so.2 in the loader checks of tests/test_dist_nccl.c:
 * it exports every function src/dist/nccl.c resolves, each doing nothing,
 * except ncclGetVersion, which reports FAKE_NCCL_VERSION (an NCCL version
 * code). Built three times by CMakeLists.txt: a good one, one too old, and
 * one without ncclSend (FAKE_NCCL_NO_SEND). Never used for a collective. */
/* exported even where the build hides symbols by default */
#define FAKE_API __attribute__((visibility("default")))
#define FAKE_STUB(name)      \
    FAKE_API int name(void); \
    FAKE_API int name(void) { return 0; }

FAKE_API int ncclGetVersion(int *version);
FAKE_API int ncclGetVersion(int *version) {
    *version = FAKE_NCCL_VERSION;
    return 0;
}
FAKE_STUB(ncclGetErrorString)
FAKE_STUB(ncclGetLastError)
FAKE_STUB(ncclGetUniqueId)
FAKE_STUB(ncclCommInitRank)
FAKE_STUB(ncclCommDestroy)
FAKE_STUB(ncclCommAbort)
FAKE_STUB(ncclCommGetAsyncError)
FAKE_STUB(ncclCommCuDevice)
FAKE_STUB(ncclAllReduce)
FAKE_STUB(ncclBroadcast)
FAKE_STUB(ncclAllGather)
FAKE_STUB(ncclReduceScatter)
#ifndef FAKE_NCCL_NO_SEND
FAKE_STUB(ncclSend)
#endif
FAKE_STUB(ncclRecv)
FAKE_STUB(ncclGroupStart)
FAKE_STUB(ncclGroupEnd)
