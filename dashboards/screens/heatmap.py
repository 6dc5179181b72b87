"""The heatmap page (see dashboards.drill_pages.heatmap)."""

from dashboards import drill_pages
from dashboards.app import current_view

drill_pages.heatmap(current_view())
