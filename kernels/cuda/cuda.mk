# The CUDA backend's build, included at the end of the top Makefile:
#     -include kernels/cuda/cuda.mk
# It needs the top Makefile's CC, ALL_CFLAGS, LDLIBS and its build/obj rules.
#
#   make test-gpu     build and run build/gpu/test_kernels_cuda (each kernel vs
#                     its CPU twin) and build/gpu/test_forward_cuda (the CUDA
#                     forward pass vs the CPU one); SKIP lines without a device
#   make bench-gpu    build and run build/gpu/bench_attention_cuda (+ SDPA)
#   make gpu          just build the CUDA objects and the two programs
#   make              also build/gpu/libaha_cuda.so, which ./aha loads for --device cuda
#   make cuda-lib     that library alone (DEMO_DEVICE=cuda make demo); an error
#                     saying why where it cannot be built
#
#   CUDA_ARCH ?= sm_90a   one or more targets: CUDA_ARCH="sm_80 sm_90a"
#   NVCC ?= nvcc          CUDA_HOME defaults to nvcc's parent directory
#   CUDA=0 / CUDA=1       build without CUDA though nvcc works / fail without nvcc
#   AHA_DEPS=1            build against .deps/root (scripts/fetch-debs.sh) even
#                         when the system has the libraries; it is used by
#                         itself when the system lacks cblas.h or hdf5.h
#
# nvcc is really detected: it must be on PATH and `nvcc --version` must
# succeed. Without it every target here prints "CUDA skipped: nvcc not found"
# and the CPU build is untouched.

comma     := ,
NVCC      ?= nvcc
CUDA_ARCH ?= sm_90a
HAVE_NVCC := $(shell command -v $(NVCC) >/dev/null 2>&1 && $(NVCC) --version >/dev/null 2>&1 && echo yes)
# CUDA=1 insists (no nvcc is an error), CUDA=0 declines; unset: use nvcc if it works.
ifeq ($(CUDA),1)
ifneq ($(HAVE_NVCC),yes)
$(error CUDA=1 but $(NVCC) is not on PATH or does not run (set NVCC=/path/to/nvcc))
endif
endif
ifeq ($(CUDA),0)
HAVE_NVCC :=
CUDA_SKIP_WHY := CUDA=0
endif
ifeq ($(HAVE_NVCC),yes)
# Every target asked for must be one this nvcc knows (sm_90a needs CUDA 12+;
# --list-gpu-code names sm_90 for it).
NVCC_CODES   := $(shell $(NVCC) --list-gpu-code 2>/dev/null)
CUDA_MISSING := $(filter-out $(NVCC_CODES),$(patsubst %a,%,$(patsubst %f,%,$(CUDA_ARCH))))
ifneq ($(CUDA_MISSING),)
CUDA_SKIP_WHY := nvcc cannot build $(CUDA_MISSING) (it knows: $(NVCC_CODES))
HAVE_NVCC :=
endif
endif
CUDA_SKIP_WHY ?= nvcc not found

.PHONY: gpu test-gpu bench-gpu cuda-lib

# ---- the project-local Debian prefix, when the system lacks the libraries ----
AHA_SYS_LIBS_OK := $(shell test -f $(BLAS_INC)/cblas.h && { pkg-config --exists $(PKGS) 2>/dev/null || test -f /usr/include/hdf5/serial/hdf5.h; } && echo yes)
ifneq ($(AHA_DEPS)$(AHA_SYS_LIBS_OK),yes)
ifneq ($(wildcard .deps/env.mk),)
include .deps/env.mk
ALL_CFLAGS := $(DEPS_CFLAGS) $(ALL_CFLAGS)
LDLIBS     += $(DEPS_LDFLAGS)
$(info aha: building against the Debian packages in $(DEPS_ROOT))
endif
endif

# ---- the CPU emulator: the same kernels and tests, no nvcc, no GPU ----------
# tests/gpu/emu/cuda_emu.h runs each CUDA thread as a coroutine; the host C++
# compiler builds every .cu. `make emu-gpu` runs the kernel tests (--tiny
# shapes; EMU_ARGS=--quick for more) and the forward-pass test (f32).
# -fno-strict-aliasing: the kernels read shared memory of halves as 32-bit
# and 16-byte words, as CUDA code does and nvcc allows.
EMU_CXX   = $(CXX) -x c++ -std=c++17 -O2 -fno-strict-aliasing -g -DAHA_CUDA_EMU -include tests/gpu/emu/cuda_emu.h -fopenmp \
            $(TEST_INC) $(filter -I%,$(ALL_CFLAGS)) -w
EMU_KOBJ  := $(patsubst %.cu,build/gpu/emu/%.o,$(sort $(wildcard kernels/cuda/*.cu)))
# kernels/cuda/dev/: development-only code (the benchmarked tensor-core
# variant 2, the host twins of the routing bookkeeping). The kernel tests and
# benchmarks link it; the library, the forward pass and the CLI never do.
CUDA_DEV_SRC := $(sort $(wildcard kernels/cuda/dev/*.cu kernels/cuda/dev/*.c))
EMU_DEV_OBJ  := $(patsubst %,build/gpu/emu/%.o,$(basename $(CUDA_DEV_SRC)))
# The CPU twins the kernel and forward-pass tests compare against.
GPU_TWINS := $(addprefix build/obj/,kernels/ops.o kernels/vmath.o kernels/attention.o \
             kernels/attention_routed.o kernels/dependency.o runtime/router.o runtime/trace/trace_policy.o common/err.o \
             runtime/cuda/gpu_dtype.o runtime/format/tensor.o common/dtype.o common/f16.o common/flags.o common/buf.o \
             kernels/weight.o kernels/weight_dot.o kernels/matmul_bf16.o)
EMU_RT    := $(patsubst %.cu,build/gpu/emu/%.o,$(sort $(wildcard runtime/cuda/*.cu)))
EMU_ARGS  ?= --tiny
# A source of a stage folder also sees its include row (tests/ sees every stage).
emu_inc    = $(if $(filter tests/%,$(1)),,$(call stage_inc,$(1)))
EMU_TESTS := $(addprefix build/gpu/emu/tests/gpu/,test_kernels_cuda.o test_forward_cuda.o)
.PHONY: emu-gpu

build/gpu/emu/%.o: %.cu build/gpu/emu/%.o.d
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(DEPFLAGS) $(call emu_inc,$<) -c -o $@ $<

build/gpu/emu/%.o: %.c build/gpu/emu/%.o.d
	@mkdir -p $(dir $@)
	$(EMU_CXX) $(DEPFLAGS) $(call emu_inc,$<) -c -o $@ $<

build/gpu/emu/test_kernels_emu: build/gpu/emu/tests/gpu/test_kernels_cuda.o $(EMU_KOBJ) $(EMU_DEV_OBJ) $(GPU_TWINS)
	$(CXX) -o $@ $^ $(LDLIBS)

build/gpu/emu/test_forward_emu: build/gpu/emu/tests/gpu/test_forward_cuda.o $(EMU_RT) \
                                $(EMU_KOBJ) build/obj/runtime/forward.o $(GPU_TWINS)
	$(CXX) -o $@ $^ $(LDLIBS)

# The whole CLI with the emulated device: `build/gpu/emu/aha record --device
# cuda ...` runs the CUDA forward pass on the CPU (tests/test_device.py); it
# links the emulated backend in place of the loader.
AHA_NO_GPU := build/obj/runtime/cuda/gpu_load.o
build/gpu/emu/aha: build/obj/aha.o $(filter-out $(AHA_NO_GPU),$(OBJ)) $(EMU_RT) $(EMU_KOBJ)
	$(CXX) -o $@ $^ $(LDLIBS)

emu-gpu: build/gpu/emu/test_kernels_emu build/gpu/emu/test_forward_emu
	build/gpu/emu/test_kernels_emu $(EMU_ARGS)
	build/gpu/emu/test_forward_emu

# `make test` runs the emulated kernels, forward pass and CLI everywhere
# (minutes): the CUDA code's logic is checked against the CPU twins without a GPU.
check: build/gpu/emu/test_kernels_emu build/gpu/emu/test_forward_emu build/gpu/emu/aha

ifeq ($(HAVE_NVCC),yes)
CUDA_HOME  ?= $(patsubst %/bin/,%,$(dir $(shell command -v $(NVCC))))
GENCODE    := $(foreach a,$(CUDA_ARCH),-gencode=arch=compute_$(patsubst sm_%,%,$(a)),code=$(a))
NVCCFLAGS  ?= -O3 -std=c++17 -lineinfo
# Position-independent for libaha_cuda.so, whose only visible symbol is
# aha_cuda_api (runtime/cuda/gpu_api.h): its own calls never resolve into ./aha.
PIC_FLAGS  := -fPIC -fvisibility=hidden
ALL_NVCCFLAGS = $(NVCCFLAGS) $(GENCODE) -Xcompiler -fopenmp,$(subst $() ,$(comma),$(PIC_FLAGS)) \
                $(filter -I%,$(ALL_CFLAGS)) -Xptxas -warn-spills
CUDA_LIBS  := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart
CUDA_SRC   := $(sort $(wildcard kernels/cuda/*.cu))
CUDA_OBJ   := $(CUDA_SRC:%.cu=build/gpu/obj/%.o)
CUDA_DEV_OBJ := $(patsubst %,build/gpu/obj/%.o,$(basename $(CUDA_DEV_SRC)))
# The device forward pass (runtime/cuda/*.cu): in the tests, and with the
# kernels in build/gpu/libaha_cuda.so, which ./aha loads for --device cuda.
CUDA_RT_OBJ := $(patsubst %.cu,build/gpu/obj/%.o,$(sort $(wildcard runtime/cuda/*.cu)))
build/gpu/libaha_cuda.so: $(CUDA_RT_OBJ) $(CUDA_OBJ)
	$(CXX) -shared -o $@ $^ $(CUDA_LIBS)
all check cuda-lib: build/gpu/libaha_cuda.so

build/gpu/obj/%.o: %.cu build/gpu/obj/%.o.d
	@mkdir -p $(dir $@)
	$(NVCC) $(ALL_NVCCFLAGS) $(DEPFLAGS) $(call stage_inc,$<) -c -o $@ $<

build/gpu/obj/%.o: %.c build/gpu/obj/%.o.d
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) $(call stage_inc,$<) $(PIC_FLAGS) -I$(CUDA_HOME)/include -c -o $@ $<

# The test and benchmark programs: test_kernels_cuda and bench_attention_cuda
# also link kernels/cuda/dev/.
GPU_PROGS := $(addprefix build/gpu/,test_kernels_cuda bench_attention_cuda test_forward_cuda bench_forward_cuda)
build/gpu/test_kernels_cuda build/gpu/bench_attention_cuda: GPU_LINK = $(CUDA_OBJ) $(CUDA_DEV_OBJ) $(GPU_TWINS)
build/gpu/test_forward_cuda build/gpu/bench_forward_cuda: GPU_LINK = $(CUDA_RT_OBJ) $(CUDA_OBJ) \
                                                          build/obj/runtime/forward.o $(GPU_TWINS)
build/gpu/test_kernels_cuda build/gpu/bench_attention_cuda: $(CUDA_DEV_OBJ)
build/gpu/test_forward_cuda build/gpu/bench_forward_cuda: $(CUDA_RT_OBJ) build/obj/runtime/forward.o
build/gpu/%: tests/gpu/%.cu build/gpu/%.d $(CUDA_OBJ) $(GPU_TWINS)
	@mkdir -p $(dir $@)
	$(NVCC) $(ALL_NVCCFLAGS) $(DEPFLAGS) -MT $@ $(TEST_INC) -c -o $@.o $<
	$(CXX) -o $@ $@.o $(GPU_LINK) $(CUDA_LIBS) $(LDLIBS)

# `make test` (its check target) builds the GPU tests too, so that the CUDA
# code is compiled and linked wherever nvcc is; tests/run.sh runs them (they
# print SKIP lines without a device).
GPU_TESTS := build/gpu/test_kernels_cuda build/gpu/test_forward_cuda
check: $(GPU_TESTS)

gpu: build/gpu/libaha_cuda.so build/gpu/test_kernels_cuda build/gpu/test_forward_cuda build/gpu/bench_attention_cuda build/gpu/bench_forward_cuda

test-gpu: build/gpu/test_kernels_cuda build/gpu/test_forward_cuda
	build/gpu/test_kernels_cuda $(TEST_GPU_ARGS)
	build/gpu/test_forward_cuda

bench-gpu: build/gpu/bench_attention_cuda build/gpu/bench_forward_cuda
	build/gpu/bench_attention_cuda $(BENCH_GPU_ARGS)
	build/gpu/bench_forward_cuda $(BENCH_GPU_ARGS)
	-python3 tests/gpu/sdpa_bench.py $(SDPA_ARGS)
else
.PHONY: cuda-skipped
gpu test-gpu bench-gpu cuda-skipped:
	@echo "CUDA skipped: $(CUDA_SKIP_WHY)"
all check: cuda-skipped
cuda-lib:
	@echo "make cuda-lib: cannot build build/gpu/libaha_cuda.so: $(CUDA_SKIP_WHY) (NVCC=/path/to/nvcc)" >&2; exit 1
endif

# Header dependencies (the top Makefile's DEPFLAGS) of every object built here.
GPU_DEPS   = $(addsuffix .d,$(EMU_KOBJ) $(EMU_DEV_OBJ) $(EMU_RT) $(EMU_TESTS) $(CUDA_OBJ) $(CUDA_DEV_OBJ) \
             $(CUDA_RT_OBJ) $(GPU_PROGS))
$(GPU_DEPS):
-include $(wildcard $(GPU_DEPS))
