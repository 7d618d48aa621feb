//! Application message formats (to be written).
