"""lanbridge_node: write a lanbridge node in Python (asyncio). See README.md beside this package."""
from .canvas import Canvas, PinMismatch, fetch as fetch_canvas
from .node import BridgeMismatch, Details, Invite, LanbridgeError, Node, NotPaired, Revoked
from .store import BridgePin, NodeStore

__all__ = ["Canvas", "PinMismatch", "fetch_canvas", "BridgeMismatch", "BridgePin", "Details", "Invite", "LanbridgeError", "Node", "NodeStore", "NotPaired", "Revoked"]
__version__ = "0.10.0"
