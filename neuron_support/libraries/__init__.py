"""The libraries the system tests, a folder each: everything of one library and nothing else. The shared modules reach them only through the registry (`neuron_support.registry`)."""
