"""Every team a namespace label may name becomes a Team row (docs/teams-and-relabels.md), as
ingest now does when it first sees a label value (apps/teams/labels.py ensure_label_teams):
a team known only from labels gets its page, its place in the picker, and a row an admin can
give a lead. What may name a team follows the cluster's label trust: every label on a
`trusted` cluster, approved claims on an `approve` one, none on `known_teams` (there only an
admin makes teams). Running it again adds nothing; going back removes nothing.
"""
from django.db import migrations

UNASSIGNED = "unassigned"          # apps.teams.models.UNASSIGNED, frozen here
TEAM_FROM_LABEL = "team.created_from_label"
TRUSTED, APPROVE = "trusted", "approve"   # apps.clusters.models.Cluster.LabelTrust, frozen here


def teams_for_label_values(apps, schema_editor):
    Team = apps.get_model("teams", "Team")
    Namespace = apps.get_model("teams", "Namespace")
    NamespaceLabel = apps.get_model("teams", "NamespaceLabel")
    LabelClaim = apps.get_model("teams", "LabelClaim")
    AuditEvent = apps.get_model("teams", "AuditEvent")
    max_length = Team._meta.get_field("name").max_length
    trusted = {"namespace__cluster__label_trust": TRUSTED}
    names = set(NamespaceLabel.objects.filter(**trusted).values_list("team_label", flat=True).distinct())
    names |= set(Namespace.objects.filter(cluster__label_trust=TRUSTED).values_list("label_team", flat=True).distinct())
    names |= set(LabelClaim.objects.filter(namespace__cluster__label_trust=APPROVE, decision="approved")
                 .values_list("team_label", flat=True).distinct())
    names = {n for n in names if n and n != UNASSIGNED and len(n) <= max_length}
    missing = sorted(names - set(Team.objects.values_list("name", flat=True)))
    Team.objects.bulk_create([Team(name=n) for n in missing], ignore_conflicts=True)
    AuditEvent.objects.bulk_create([AuditEvent(action=TEAM_FROM_LABEL, target=n,
                                               new_value={"team": n, "cluster": None, "by": "migration"})
                                    for n in missing])


class Migration(migrations.Migration):

    dependencies = [
        ("teams", "0005_change_history"),
        ("clusters", "0006_label_trust"),
    ]

    operations = [
        migrations.RunPython(teams_for_label_values, migrations.RunPython.noop),
    ]
