"""Model classes that exist only in the tests, registered with transformers' Auto classes when imported.

A run's processes import this through `sitecustomize` (a folder on PYTHONPATH), the way a user's environment would register a
model class of their own: run.py loads them with `AutoModelForCausalLM` like any checkpoint.
"""
import torch
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM


class GraphBreakConfig(LlamaConfig): model_type = "graph-break-llama"


class GraphBreakLlamaForCausalLM(LlamaForCausalLM):
    "A Llama whose forward checks its input with a data-dependent branch: dynamo cannot trace it whole, and breaks the graph there."
    config_class = GraphBreakConfig

    def forward(self, input_ids=None, **kwargs):
        if input_ids is not None and (input_ids < 0).any(): raise ValueError("a negative token id")  # GRAPH BREAK
        return super().forward(input_ids=input_ids, **kwargs)


class CompiledOnlyConfig(LlamaConfig): model_type = "compiled-only-llama"


class CompiledOnlyLlamaForCausalLM(LlamaForCausalLM):
    "A Llama that fails only when compiled (a wrong shape, as a faulty lowering would give): eagerly, on the CPU, it runs."
    config_class = CompiledOnlyConfig

    def forward(self, input_ids=None, **kwargs):
        if torch.compiler.is_compiling(): input_ids = input_ids.reshape(-1, 7)
        return super().forward(input_ids=input_ids, **kwargs)


for config, model in ((GraphBreakConfig, GraphBreakLlamaForCausalLM), (CompiledOnlyConfig, CompiledOnlyLlamaForCausalLM)):
    AutoConfig.register(config.model_type, config)
    AutoModelForCausalLM.register(config, model)
