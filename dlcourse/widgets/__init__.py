"""Widgets: each is a function returning an ipywidgets object; its logic is a plain, tested function."""

from dlcourse.widgets.alignment import alignment_state, alignment_viewer
from dlcourse.widgets.attention import (
    MEAN,
    HeatmapState,
    attention_explorer,
    draw_heatmap,
    draw_positional_encoding,
    heatmap_state,
)
from dlcourse.widgets.base import InteractiveView, interactive_view
from dlcourse.widgets.beams import BeamTree, RecordingModel, beam_tree_explorer, beam_tree_state, draw_beam_tree
from dlcourse.widgets.optim import (
    PlaygroundState,
    ScheduleState,
    draw_schedule,
    draw_valley,
    optimizer_playground,
    playground_state,
    schedule_designer,
    schedule_state,
)
from dlcourse.widgets.sampling import (
    LanguageModel,
    NextTokenState,
    next_token_html,
    next_token_state,
    sampling_explorer,
    token_label,
)
from dlcourse.widgets.softmax import TemperatureState, draw_temperature, softmax_temperature, temperature_state
from dlcourse.widgets.sparse import PatternState, draw_masks, draw_pattern, pattern_designer, pattern_state

__all__ = [
    "InteractiveView",
    "interactive_view",
    "TemperatureState",
    "temperature_state",
    "draw_temperature",
    "softmax_temperature",
    "MEAN",
    "HeatmapState",
    "heatmap_state",
    "draw_heatmap",
    "attention_explorer",
    "draw_positional_encoding",
    "alignment_state",
    "alignment_viewer",
    "LanguageModel",
    "NextTokenState",
    "next_token_state",
    "next_token_html",
    "sampling_explorer",
    "token_label",
    "RecordingModel",
    "BeamTree",
    "beam_tree_state",
    "draw_beam_tree",
    "beam_tree_explorer",
    "PlaygroundState",
    "playground_state",
    "draw_valley",
    "optimizer_playground",
    "ScheduleState",
    "schedule_state",
    "draw_schedule",
    "schedule_designer",
    "draw_masks",
    "PatternState",
    "pattern_state",
    "draw_pattern",
    "pattern_designer",
]
