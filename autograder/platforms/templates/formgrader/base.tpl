{#- Every formgrader page: formgrader's own layout, with the course's notice above the page's content
    (see autograder/platforms/formgrader_notice.py). -#}
{%- extends "nbgrader/base.tpl" -%}
{%- block body -%}
{%- set shown = course_notice() -%}
<div class="alert alert-info" id="course-notice" role="note" aria-label="Course grading notice">
  <p>{{ shown.penalty | e }}</p>
  {%- if shown.problem %}
  <p class="text-danger" id="course-notice-problem"><strong>{{ shown.problem | e }}</strong></p>
  {%- endif %}
  {%- if shown.late %}
  <p>Late submissions, whose score here is higher than in the export:</p>
  <ul id="course-notice-late">
    {%- for line in shown.late %}
    <li>{{ line | e }}</li>
    {%- endfor %}
    {%- if shown.more_late %}
    <li>… and {{ shown.more_late }} more (make grades lists them all)</li>
    {%- endif %}
  </ul>
  {%- endif %}
  {%- if shown.review %}
  <p>Review items still open (review.csv lists them with their reasons):</p>
  <ul id="course-notice-review">
    {%- for line in shown.review %}
    <li>{{ line | e }}</li>
    {%- endfor %}
    {%- if shown.more_review %}
    <li>… and {{ shown.more_review }} more</li>
    {%- endif %}
  </ul>
  {%- else %}
  <p id="course-notice-review">No review item is open.</p>
  {%- endif %}
</div>
{{ super() }}
{%- endblock -%}
