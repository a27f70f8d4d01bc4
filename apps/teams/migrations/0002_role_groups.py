"""The four roles are Django groups (apps.teams.access); create them so the admin can assign users."""
from django.db import migrations

ROLES = ("admin", "finance", "team_lead", "viewer")


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES, user__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
