# The MPI job's library, included at the end of the top Makefile:
#     -include runtime/mpi/mpi.mk
#
#   make              also build/mpi/libaha_mpi.so where mpicc is found; ./aha
#                     opens it only when mpirun (or another MPI launcher)
#                     started it, so one ./aha runs with or without libmpi
#   MPI=0 / MPI=1     build without MPI though mpicc works / fail without it
#   MPICC ?= mpicc
#
# mpicc is really detected: on PATH and `mpicc --showme:version` (Open MPI) or
# `mpicc -show` (MPICH) succeeds. Without it "MPI skipped: mpicc not found" and
# the tests that need it print SKIP lines.

MPICC    ?= mpicc
HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && { $(MPICC) --showme:version >/dev/null 2>&1 || $(MPICC) -show >/dev/null 2>&1; } && echo yes)
ifeq ($(MPI),1)
ifneq ($(HAVE_MPI),yes)
$(error MPI=1 but $(MPICC) is not on PATH or does not run (apt-get install libopenmpi-dev openmpi-bin))
endif
endif
ifeq ($(MPI),0)
HAVE_MPI :=
endif

.PHONY: mpi mpi-skipped
ifeq ($(HAVE_MPI),yes)
# Position-independent; its only entry is aha_mpi_api_get (mpi_api.h).
build/mpi/libaha_mpi.so: runtime/mpi/mpi_lib.c runtime/record/mpi_api.h
	@mkdir -p $(dir $@)
	$(MPICC) -std=c11 -O2 -Wall -Wextra -fPIC -shared $(call stage_inc,$<) -o $@ $<
mpi all check: build/mpi/libaha_mpi.so
else
mpi all check: mpi-skipped
mpi-skipped:
	@echo "MPI skipped: $(if $(filter 0,$(MPI)),MPI=0,$(MPICC) not found) (build/mpi/libaha_mpi.so not built; mpirun of aha is refused)"
endif
