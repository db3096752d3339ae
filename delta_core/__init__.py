"""delta_core: our implementation of the Delta Transaction Log Protocol (PROTOCOL.md, delta-io/delta)."""

__version__ = "0.1.0"
ENGINE_INFO = f"delta-maintenance/delta_core-{__version__}"
