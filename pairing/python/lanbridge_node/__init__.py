"""lanbridge_node: write a lanbridge node in Python (asyncio). See README.md beside this package."""
from .node import BridgeMismatch, Details, Invite, LanbridgeError, Node, NotPaired, Revoked
from .store import BridgePin, NodeStore

__all__ = ["BridgeMismatch", "BridgePin", "Details", "Invite", "LanbridgeError", "Node", "NodeStore", "NotPaired", "Revoked"]
__version__ = "0.9.0"
