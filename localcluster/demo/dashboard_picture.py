"""``make demo OBSERVE=1``'s picture: the dashboard's widgets, as read back from CloudWatch
(``localcluster.services.cloudwatch_widgets``), drawn into one PNG in the dashboard's layout (two
graphs a row, in its order). A widget with no data says why instead of drawing an empty graph."""

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from matplotlib.figure import Figure  # the object API: no pyplot state, no display backend

from localcluster.services.cloudwatch_widgets import Widget
from render.cloudwatch_dashboard import WIDGETS_PER_ROW
from render.metric_specs import CONTAINER_INSIGHTS_NAMESPACE

PICTURE_DPI = 100
PANEL_INCHES = (7.0, 3.2)
NO_GPU_NOTE = (
    "no data here: Container Insights' GPU metrics come from\n"
    "the DCGM exporter on a GPU node, and no GPU runs locally"
)
NO_DATA_NOTE = "no data in this window"


def _note(widget: Widget) -> str:
    if widget.specs and all(spec.namespace == CONTAINER_INSIGHTS_NAMESPACE for spec in widget.specs):
        return NO_GPU_NOTE
    return NO_DATA_NOTE


def render(widgets: Sequence[Widget], title: str, path: Path, window: tuple[datetime, datetime]) -> Path:
    """Draw ``widgets`` with a ``title`` over them into the PNG at ``path``; returns the path."""
    rows = (len(widgets) + WIDGETS_PER_ROW - 1) // WIDGETS_PER_ROW
    figure = Figure(
        figsize=(PANEL_INCHES[0] * WIDGETS_PER_ROW, PANEL_INCHES[1] * rows + 0.6), layout="constrained"
    )
    figure.suptitle(title, fontsize=13)
    axes = figure.subplots(rows, WIDGETS_PER_ROW, squeeze=False)
    for index, ax in enumerate(axes.flat):
        if index >= len(widgets):
            ax.set_visible(False)
            continue
        widget = widgets[index]
        ax.set_title(widget.title, fontsize=10, loc="left")
        ax.set_xlim(0, (window[1] - window[0]).total_seconds())
        ax.set_xlabel("seconds into the demo", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        if not widget.lines:
            ax.text(0.5, 0.5, _note(widget), ha="center", va="center", transform=ax.transAxes, color="gray")
            ax.set_yticks([])
            continue
        for line in widget.lines:
            times = [(timestamp - window[0]).total_seconds() for timestamp, _ in line.points]
            values = [value for _, value in line.points]
            ax.plot(times, values, marker=".", linewidth=1.2, label=line.label)
        units = sorted({line.unit for line in widget.lines})
        ax.set_ylabel(" / ".join(units), fontsize=8)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper left")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=PICTURE_DPI)
    return path
