"""The showback page (see dashboards.showback_page.showback)."""

from dashboards import pages, showback_page
from dashboards.app import current_view

view = current_view()
pages.header(view, "showback_page.title")
showback_page.showback(view)
