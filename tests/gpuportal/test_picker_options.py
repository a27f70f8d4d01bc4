"""The picker's options (gpuportal/navigation.py): one join instead of a template loop, with the
same HTML the loop gave — each value escaped, the picked one marked."""
from django.template import Context, Template


def test_options_are_escaped_and_the_picked_one_is_selected():
    html = Template("{% load portal_nav %}{% picker_options values picked %}").render(
        Context({"values": ["a<b", 'q"t', "team-1"], "picked": "team-1"}))
    assert html == ('<option value="a&lt;b">a&lt;b</option>'
                    '<option value="q&quot;t">q&quot;t</option>'
                    '<option value="team-1" selected>team-1</option>')


def test_nothing_picked_selects_nothing():
    html = Template("{% load portal_nav %}{% picker_options values picked %}").render(
        Context({"values": ["x"], "picked": None}))
    assert html == '<option value="x">x</option>'
