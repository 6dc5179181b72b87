"""Pure evaluators, idle detection and protection lines: frames in, frames out."""
