"""The editor's Profiler panel: the costliest nodes in a sortable table, why the selected node ran,
and the colours of the canvas's heat tint.

The panel asks for a `profile` reply (app/engine/reports/profile_costs.py) through `request(node,
top)` about twice a second while it is shown or the heat tint is on, and shows what `show_reply`
hands it: the editor asks the engine (the reply comes back as a message). The table lists nodes
(self ms per frame, which is also their cumulative time) and subpatch instances (cumulative: the
self times of the nodes under their path); it is sorted by any column (numbers as numbers), and
keeps the selected row across refreshes. The "GPU ms/frame" column shows each node's mean GPU time
per frame from GL timer queries (blank for a node that does not draw); it reads "n/a" in every row
when the patch's draws cannot be timed (no GL context, or no timer queries), the reason in its
tooltip and the summary. Double-clicking a row asks the editor to select that node on the canvas
(`node_activated`); selecting a row, or a node on the canvas (`explain`), shows that node's
`explain` lines under "Why did this run?".

Heat: `heat_color(ms)` maps self time per frame on a log scale from `HEAT_COLD_MS` (cold blue-grey)
to `HEAT_HOT_MS` (a 60 fps frame: red). Replies come from the engine, so every field is checked;
a malformed row is skipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

COLUMNS = (
    "node", "type", "runs", "self ms/frame", "cumulative ms/frame", "GPU ms/frame", "last reason",
)  # fmt: skip
NODE, TYPE, RUNS, SELF_MS, CUMULATIVE_MS, GPU_MS, REASON = range(len(COLUMNS))
GPU_NOT_AVAILABLE = "n/a"
SORT_ROLE = Qt.ItemDataRole.UserRole
REFRESH_MS = 500
TOP = 200
HEAT_COLD_MS = 0.01
HEAT_HOT_MS = 1000.0 / 60.0
HEAT_STOPS = ((70, 84, 110), (150, 110, 60), (225, 45, 30))  # cold, warm, hot
INSTANCE = "instance"
WHY_TITLE = "<b>Why did this run?</b>"
MIN_PART_HEIGHT = 24


def heat_color(ms: float) -> tuple[int, int, int]:
    """A body colour for a node costing `ms` per frame: see the module note."""
    if not ms > HEAT_COLD_MS:  # also NaN
        heat = 0.0
    else:
        heat = min(1.0, math.log(ms / HEAT_COLD_MS) / math.log(HEAT_HOT_MS / HEAT_COLD_MS))
    scaled = heat * (len(HEAT_STOPS) - 1)
    low = min(int(scaled), len(HEAT_STOPS) - 2)
    part = scaled - low
    a, b = HEAT_STOPS[low], HEAT_STOPS[low + 1]
    red, green, blue = (round(x + (y - x) * part) for x, y in zip(a, b, strict=True))
    return red, green, blue


@dataclass(frozen=True)
class CostRow:
    """One table row: a node (`runs`, `self_ms` set) or a subpatch instance (`instance`: its
    `cumulative_ms` counts the nodes under its path; `runs` and `self_ms` are those of its own
    node, None when it has none)."""

    path: str
    type_id: str
    runs: int | None
    self_ms: float | None
    cumulative_ms: float
    reason: str
    instance: bool = False
    gpu_ms: float | None = None  # None: the node does not draw (or not timed yet)
    gpu_status: str = ""  # why no draw can be timed ("": they are timed)

    def cell(self, column: int) -> Any:
        """What the table shows in `column`."""
        if column == NODE:
            return self.path
        if column == TYPE:
            return self.type_id
        if column == RUNS:
            return "" if self.runs is None else str(self.runs)
        if column == SELF_MS:
            return "" if self.self_ms is None else f"{self.self_ms:.3f}"
        if column == CUMULATIVE_MS:
            return f"{self.cumulative_ms:.3f}"
        if column == GPU_MS:
            if self.gpu_status:
                return GPU_NOT_AVAILABLE
            return "" if self.gpu_ms is None else f"{self.gpu_ms:.3f}"
        return self.reason

    def sort_key(self, column: int) -> Any:
        """What `column` sorts by (numbers as numbers; an instance's blank cells first)."""
        if column == RUNS:
            return -1 if self.runs is None else self.runs
        if column == SELF_MS:
            return -1.0 if self.self_ms is None else self.self_ms
        if column == CUMULATIVE_MS:
            return self.cumulative_ms
        if column == GPU_MS:
            return -1.0 if self.gpu_ms is None or self.gpu_status else self.gpu_ms
        return str(self.cell(column)).lower()


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def rows_of(reply: dict[str, Any], type_of: Callable[[str], str]) -> list[CostRow]:
    """The table rows of a `profile` reply; malformed entries are left out."""
    rows: list[CostRow] = []
    status = reply.get("gpu_status")
    gpu_status = status if isinstance(status, str) else GPU_NOT_AVAILABLE
    gpu_ms = reply.get("gpu_ms")
    gpu_of = gpu_ms if isinstance(gpu_ms, dict) else {}
    costs = reply.get("costs")
    for entry in costs if isinstance(costs, list) else ():
        if not (isinstance(entry, list) and len(entry) == 5 and isinstance(entry[0], str)):
            continue
        path, runs, self_ms, reason = entry[0], _number(entry[1]), _number(entry[2]), entry[4]
        if runs is None or self_ms is None:
            continue
        reason_text = str(reason) if isinstance(reason, str) else ""
        gpu = _number(gpu_of.get(path))
        rows.append(
            CostRow(path, type_of(path), int(runs), self_ms, self_ms, reason_text,
                    gpu_ms=gpu, gpu_status=gpu_status)
        )  # fmt: skip
    cumulative: dict[str, float] = {}
    instances = reply.get("instances")
    for entry in instances if isinstance(instances, list) else ():
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str):
            ms = _number(entry[1])
            if ms is not None:
                cumulative[entry[0]] = ms
    rows = [
        replace(row, cumulative_ms=cumulative[row.path], instance=True)
        if row.path in cumulative
        else row
        for row in rows
    ]
    listed = {row.path for row in rows}
    for path, ms in cumulative.items():
        if path not in listed:
            rows.append(
                CostRow(path, type_of(path) or INSTANCE, None, None, ms, INSTANCE, True,
                        gpu_status=gpu_status)
            )  # fmt: skip
    return rows


class CostModel(QAbstractTableModel):
    """The rows of the latest reply, for a QSortFilterProxyModel sorting by `SORT_ROLE`."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[CostRow] = []

    def set_rows(self, rows: list[CostRow]) -> None:
        """Show `rows`: in place when the same nodes are listed (a click or double-click in
        progress keeps its row), else anew."""
        rows = sorted(rows, key=lambda row: row.path)
        if [row.path for row in rows] == [row.path for row in self.rows]:
            self.rows = rows
            if rows:
                last = self.index(len(rows) - 1, len(COLUMNS) - 1)
                self.dataChanged.emit(self.index(0, 0), last)
            return
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return row.cell(index.column())
        if role == SORT_ROLE:
            return row.sort_key(index.column())
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() in (
            RUNS, SELF_MS, CUMULATIVE_MS, GPU_MS,
        ):  # fmt: skip
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == REASON:
            return row.reason
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == GPU_MS and row.gpu_status:
            return f"no GPU time: {row.gpu_status}"
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None


class QtProfilerPanel(QWidget):
    """The Profiler dock's widget: see the module note. The editor sets `request` (ask for a
    reply), `type_of` (a node path's type, or a definition name for an instance) and
    `heat_wanted` (keep refreshing while the canvas is tinted though the panel is hidden)."""

    node_activated = Signal(str)  # a row was double-clicked: select that node (a path)
    replied = Signal()  # a reply was shown

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request: Callable[[str | None, int], None] = lambda node, top: None
        self.type_of: Callable[[str], str] = lambda path: ""
        self.heat_wanted = False
        self.explained: str | None = None  # the node whose explain lines are asked for
        self.frames = 0
        self.self_ms: dict[str, float] = {}  # path -> self ms per frame, from the latest reply
        self.cumulative_ms: dict[str, float] = {}  # instance path -> cumulative ms per frame
        self.model = CostModel()
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(SELF_MS, Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.setAlternatingRowColors(True)
        self.table.setMinimumHeight(MIN_PART_HEIGHT)  # the dock shares its area with Messages
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for column, width in ((NODE, 150), (TYPE, 110), (RUNS, 60), (SELF_MS, 100),
                              (CUMULATIVE_MS, 130), (GPU_MS, 100)):  # fmt: skip
            self.table.setColumnWidth(column, width)
        self.table.doubleClicked.connect(self._on_double_click)
        self.table.selectionModel().currentRowChanged.connect(self._on_row)
        self.summary = QLabel("No profile yet")
        self.why_title = QLabel(WHY_TITLE)
        self.why = QPlainTextEdit()
        self.why.setReadOnly(True)
        self.why.setMinimumHeight(MIN_PART_HEIGHT)
        self.why.setPlaceholderText("Select a node on the canvas or in the table")
        below = QWidget()
        below_layout = QVBoxLayout(below)
        below_layout.setContentsMargins(0, 0, 0, 0)
        below_layout.addWidget(self.why_title)
        below_layout.addWidget(self.why)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(below)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(splitter, 1)
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()

    @property
    def shown(self) -> bool:
        """Whether the panel can be seen (a dock in a tab behind another is "visible" to Qt)."""
        return self.isVisible() and not self.visibleRegion().isEmpty()

    def refresh(self) -> None:
        """Ask for a reply now, if the panel is shown or the heat tint is on."""
        shown = self.shown
        if shown or self.heat_wanted:
            self.request(self.explained if shown else None, TOP)

    def explain(self, path: str | None) -> None:
        """Show why `path` ran (None: nobody)."""
        if path == self.explained:
            return
        self.explained = path
        self.why_title.setText(f"{WHY_TITLE} {path}" if path else WHY_TITLE)
        self.why.setPlainText("")
        if path is not None:
            QTimer.singleShot(0, self.refresh)  # not inside the click that chose it

    def show_reply(self, reply: dict[str, Any]) -> None:
        """Show a `profile` reply (see app/engine/reports/profile_costs.py)."""
        rows = rows_of(reply, self.type_of)
        frames = _number(reply.get("frames"))
        self.frames = int(frames) if frames is not None else 0
        self.self_ms = {row.path: row.self_ms for row in rows if row.self_ms is not None}
        self.cumulative_ms = {row.path: row.cumulative_ms for row in rows if row.instance}
        chosen = self._chosen_path()
        self.model.set_rows(rows)
        if chosen is not None:
            self._select_row(chosen)
        status = reply.get("gpu_status")
        gpu_note = (
            f"; GPU {GPU_NOT_AVAILABLE}: {status}" if isinstance(status, str) and status else ""
        )
        self.summary.setText(
            f"{len(self.self_ms)} nodes, {self.frames} frames profiled (self, cumulative and GPU: "
            f"mean ms per frame){gpu_note}"
        )
        explained = reply.get("explain")
        if isinstance(explained, dict) and explained.get("node") == self.explained:
            lines = explained.get("lines")
            if isinstance(lines, list):
                text = "\n".join(str(line) for line in lines)
                if text != self.why.toPlainText():
                    self.why.setPlainText(text)
        self.replied.emit()

    def cost_of(self, path: str) -> float:
        """Cumulative ms per frame of an instance, self ms of a node; 0 when unknown."""
        return self.cumulative_ms.get(path, self.self_ms.get(path, 0.0))

    def shown_paths(self) -> list[str]:
        """The paths in the table's order (as sorted)."""
        return [
            str(self.proxy.index(r, NODE).data(Qt.ItemDataRole.DisplayRole))
            for r in range(self.proxy.rowCount())
        ]

    def _chosen_path(self) -> str | None:
        current = self.table.selectionModel().currentIndex()
        if not current.isValid():
            return None
        return str(self.proxy.index(current.row(), NODE).data(Qt.ItemDataRole.DisplayRole))

    def _select_row(self, path: str) -> None:
        for r in range(self.proxy.rowCount()):
            index = self.proxy.index(r, NODE)
            if index.data(Qt.ItemDataRole.DisplayRole) == path:
                self.table.selectRow(r)  # the same node: `explain` has nothing new to ask
                return

    def _on_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.explain(str(self.proxy.index(current.row(), NODE).data()))

    def _on_double_click(self, index: QModelIndex) -> None:
        if index.isValid():
            self.node_activated.emit(str(self.proxy.index(index.row(), NODE).data()))
