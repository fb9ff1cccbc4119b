// A small CUDA job for the GPU test (gpu_test.py): kernels, copies both
// ways, a memset, a device synchronize, and one file read placed between
// two kernels, so the decoded trace can be checked against what it did.
//
//   gpu_io_kernels DATA_FILE
//
// Prints what the trace must hold:
//   KERNELS <launched>       kernels launched in total
//   BYTES <n>                bytes of each host<->device copy
//   BEFORE_READ <name>       the kernel that finished before the read
//   AFTER_READ <name>        the kernel launched after it
// Exits 77 (the tests' "skip") when there is no usable GPU or driver.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(call)                                                           \
  do {                                                                             \
    cudaError_t err_ = (call);                                                     \
    if (err_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,           \
                   cudaGetErrorString(err_));                                      \
      std::exit(99);                                                               \
    }                                                                              \
  } while (0)

__global__ void fill_kernel(float* x, int n, float v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

__global__ void add_kernel(float* x, const float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

__global__ void scale_kernel(float* x, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATA_FILE\n", argv[0]);
    return 2;
  }
  int devices = 0;
  cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::printf("SKIP no usable CUDA device: %s\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return 77;
  }

  const int n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  const int threads = 256, blocks = (n + threads - 1) / threads;
  std::vector<float> host(n, 1.0f);
  float *x = nullptr, *y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, bytes));
  CHECK_CUDA(cudaMalloc(&y, bytes));
  int launched = 0;

  CHECK_CUDA(cudaMemcpy(y, host.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(x, 0, bytes));
  fill_kernel<<<blocks, threads>>>(x, n, 2.0f);
  ++launched;
  for (int i = 0; i < 20; ++i) {
    add_kernel<<<blocks, threads>>>(x, y, n);
    ++launched;
  }
  CHECK_CUDA(cudaGetLastError());
  // Everything above has finished before the read starts ...
  CHECK_CUDA(cudaDeviceSynchronize());

  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    std::perror(argv[1]);
    return 99;
  }
  std::vector<char> chunk(1 << 16);
  ssize_t got = read(fd, chunk.data(), chunk.size());
  close(fd);
  if (got <= 0) {
    std::fprintf(stderr, "read %s: %zd\n", argv[1], got);
    return 99;
  }

  // ... and this kernel is launched after it returned.
  scale_kernel<<<blocks, threads>>>(x, n, 0.5f);
  ++launched;
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(host.data(), x, bytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaDeviceSynchronize());
  // 0 + 2 + 20 * 1 = 22, halved: 11.
  if (host[0] != 11.0f || host[n - 1] != 11.0f) {
    std::fprintf(stderr, "wrong result %f\n", host[0]);
    return 99;
  }
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));

  std::printf("KERNELS %d\nBYTES %zu\nBEFORE_READ add_kernel\nAFTER_READ scale_kernel\n",
              launched, bytes);
  return 0;
}
