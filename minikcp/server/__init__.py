"""The thin aiohttp layer: path to request info, authentication, registry call, encoding.

It holds no business logic: what kubectl sees lives in the registry or a strategy.
"""
