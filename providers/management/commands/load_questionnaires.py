"""load_questionnaires [PATH...]: load questionnaire versions (default: the shipped library)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from providers.models import Questionnaire
from providers.questionnaire_spec import QuestionnaireError, library_files, read_questionnaire_file
from providers.questionnaires import QuestionnaireConflict, questionnaire_load


class Command(BaseCommand):
    help = (
        "Load questionnaire YAML files (default: providers/library/). A loaded version never "
        "changes; your own licensed catalogue (CAIQ, SIG) in the same shape loads as imported."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("paths", nargs="*", help="questionnaire YAML files")

    def handle(self, *args, **options) -> None:
        paths = options["paths"] or library_files()
        source = Questionnaire.Source.IMPORTED if options["paths"] else Questionnaire.Source.LIBRARY
        failures = 0
        for path in paths:
            try:
                spec = read_questionnaire_file(path)
                result = questionnaire_load(
                    spec=spec, source=source, actor="manage.py load_questionnaires"
                )
            except (OSError, QuestionnaireError, QuestionnaireConflict) as exc:
                failures += 1
                self.stderr.write(f"{path}: {exc}")
                continue
            verb = "loaded" if result.created else "unchanged"
            self.stderr.write(
                f"{path}: {verb} {spec.id} v{spec.version} ({len(spec.questions)} questions)"
            )
        if failures:
            raise CommandError(f"{failures} of {len(paths)} questionnaire file(s) refused")
