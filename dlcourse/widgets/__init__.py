"""The widget pattern every chapter's widgets follow, and the attention heat map several chapters share.

A widget is a function returning an ipywidgets object; what it shows is decided by plain, tested functions.
Each chapter's own widgets live in its package (``dlcourse.<chapter>.widgets``).
"""

from dlcourse.widgets.attention import MEAN, HeatmapState, draw_heatmap, heatmap_state
from dlcourse.widgets.base import InteractiveView, interactive_view

__all__ = ["InteractiveView", "interactive_view", "MEAN", "HeatmapState", "heatmap_state", "draw_heatmap"]
