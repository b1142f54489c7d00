"""peft, the fifth library: the Hub's adapters, planned as their base model with the adapter's bytes added, loaded over
their base as transformers' users load them, and checked against the CPU's run of the same base with the same adapter,
and of the base alone."""
