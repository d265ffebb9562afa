"""linbench's own kernels (csrc/): built on first use, exposed as torch custom ops."""
