# Makefile : a thin forwarder to configure and ninja; no logic of its own.
BUILDDIR ?= build
PREFIX ?= /usr/local
NINJA ?= ninja

all: $(BUILDDIR)/build.ninja
	$(NINJA) -C $(BUILDDIR)

dist check check-long check-launchers check-rocm check-gpu: $(BUILDDIR)/build.ninja
	$(NINJA) -C $(BUILDDIR) $@

# the Python wheel (docs/python.md): dist/python/aiter_aot-*-cp39-abi3-*.whl
python: $(BUILDDIR)/build.ninja
	$(NINJA) -C $(BUILDDIR) dist
	tools/make-python-wheel .

install: $(BUILDDIR)/build.ninja
	PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) $(NINJA) -C $(BUILDDIR) install

# libFuzzer over every fuzz target (DEVELOPERS.md, "Fuzzing"): FUZZ_SECONDS each, FUZZ_JOBS processes
FUZZ_SECONDS ?= 600
FUZZ_JOBS ?= 1
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/run-fuzz.sh $(CURDIR) $(CURDIR)/$(BUILDDIR)/fuzz

$(BUILDDIR)/build.ninja:
	./configure --builddir=$(BUILDDIR) --prefix=$(PREFIX)

clean:
	rm -rf $(BUILDDIR) dist

.PHONY: all dist check check-long check-launchers check-rocm check-gpu install clean python fuzz
