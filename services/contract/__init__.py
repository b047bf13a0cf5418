"""The HTTP contract, written once: typed request/response models, their validation and serialisation, the error
codes and limits, and the OpenAPI 3.1 document generated from them. Imports neither Flask nor the gateway."""
