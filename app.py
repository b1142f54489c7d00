"""The Hugging Face Space: the lookup app over the published dataset (see space/README.md).

The dataset is NEURON_SUPPORT_DATA when set (a folder, or hf://datasets/ORG/NAME), else the project's dataset on the Hub.
"""
import os
from neuron_support.app import DEFAULT_DATA, serve_app

if __name__ == "__main__":
    # a Space reaches the app from outside its container: listen on every interface there
    serve_app(os.environ.get("NEURON_SUPPORT_DATA", DEFAULT_DATA), host="0.0.0.0" if os.environ.get("SPACE_ID") else None)
