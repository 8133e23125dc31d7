"""The demo and the calibration studies: examples of the package's use, never imported by the
library."""
